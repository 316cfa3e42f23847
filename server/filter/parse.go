package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid wraps every compile error: the expression is not a valid
// SQL92 selector (RocketMQ's MQFilterException "Invalid MessageSelector").
var ErrInvalid = errors.New("filter: invalid SQL92 expression")

// Expression is a compiled SQL92 selector.
type Expression struct {
	src   string
	root  *node
	names []string  // properties read, indexed by propNode.slot
	index propIndex // the first ctxSlots names, for Match's one pass
}

// String returns the expression as it was given to Compile.
func (e *Expression) String() string { return e.src }

// maxDepth bounds nesting so a hostile expression cannot exhaust the stack.
const maxDepth = 256

// Compile parses an SQL92 expression. The error wraps ErrInvalid and says
// where the expression went wrong.
func Compile(expr string) (*Expression, error) {
	p := &parser{lex: lexer{src: expr}, slots: map[string]int{}}
	root, err := p.selector()
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalid, expr, err)
	}
	return &Expression{src: expr, root: root, names: p.names, index: newPropIndex(p.names)}, nil
}

type parser struct {
	lex   lexer
	depth int
	slots map[string]int
	names []string
}

func (p *parser) peekKind(i int) (tokKind, error) {
	t, err := p.lex.peek(i)
	return t.kind, err
}

func (p *parser) expect(k tokKind) (token, error) {
	t, err := p.lex.next()
	if err != nil {
		return t, err
	}
	if t.kind != k {
		return t, unexpected(t, k.String())
	}
	return t, nil
}

func unexpected(t token, want string) error {
	if t.kind == tEOF {
		return fmt.Errorf("expected %s at the end", want)
	}
	return fmt.Errorf("expected %s, found %q at %d", want, t.text, t.pos)
}

// selector is JmsSelector: an orExpression that yields a boolean. Tokens
// after it are not read, as in SelectorParser.
func (p *parser) selector() (*node, error) {
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	return asBoolean(n)
}

// asBoolean is asBooleanExpression: a boolean expression as it is, a
// property as a boolean cast, anything else refused.
func asBoolean(n *node) (*node, error) {
	if isBoolean(n) {
		return n, nil
	}
	if n.op == opProp {
		return &node{op: opCast, l: n}, nil
	}
	return nil, fmt.Errorf("expression will not result in a boolean value: %s", describe(n))
}

func (p *parser) or() (*node, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for {
		k, err := p.peekKind(0)
		if err != nil {
			return nil, err
		}
		if k != tOr {
			return left, nil
		}
		p.lex.next()
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		if left, err = logic(false, left, right); err != nil {
			return nil, err
		}
	}
}

func (p *parser) and() (*node, error) {
	left, err := p.equality()
	if err != nil {
		return nil, err
	}
	for {
		k, err := p.peekKind(0)
		if err != nil {
			return nil, err
		}
		if k != tAnd {
			return left, nil
		}
		p.lex.next()
		right, err := p.equality()
		if err != nil {
			return nil, err
		}
		if left, err = logic(true, left, right); err != nil {
			return nil, err
		}
	}
}

func logic(and bool, l, r *node) (*node, error) {
	l, err := asBoolean(l)
	if err != nil {
		return nil, err
	}
	if r, err = asBoolean(r); err != nil {
		return nil, err
	}
	if and {
		return &node{op: opAnd, l: l, r: r}, nil
	}
	return &node{op: opOr, l: l, r: r}, nil
}

func (p *parser) equality() (*node, error) {
	left, err := p.comparison()
	if err != nil {
		return nil, err
	}
	for {
		k, err := p.peekKind(0)
		if err != nil {
			return nil, err
		}
		switch k {
		case tEq, tNe:
			p.lex.next()
			right, err := p.comparison()
			if err != nil {
				return nil, err
			}
			if left, err = createEqual(left, right); err != nil {
				return nil, err
			}
			if k == tNe {
				left = &node{op: opNot, l: left}
			}
		case tIs:
			p.lex.next()
			t, err := p.lex.next()
			if err != nil {
				return nil, err
			}
			not := t.kind == tNot
			if not {
				if _, err := p.expect(tNull); err != nil {
					return nil, err
				}
			} else if t.kind != tNull {
				return nil, unexpected(t, "NULL or NOT NULL")
			}
			left = &node{op: opEq, l: left, r: nullConst}
			if not {
				left = &node{op: opNot, l: left}
			}
		default:
			return left, nil
		}
	}
}

// createEqual is ComparisonExpression.createEqual with its checks.
func createEqual(l, r *node) (*node, error) {
	for _, n := range []*node{l, r} {
		if n.op == opConst && n.v.k == kNull {
			return nil, fmt.Errorf("'NULL' cannot be compared; use IS NULL")
		}
	}
	if l.op == opConst && r.op == opConst && l.boolConst && !r.boolConst {
		return nil, fmt.Errorf("'%s' cannot be compared with '%s'", describe(l), describe(r))
	}
	return &node{op: opEq, l: l, r: r}, nil
}

// checkOrdered is checkLessThanOperand: only numbers, properties and
// negations can be ordered.
func checkOrdered(n *node) error {
	if n.op == opConst {
		if n.v.k == kInt || n.v.k == kLong || n.v.k == kDouble {
			return nil
		}
		return fmt.Errorf("value '%s' cannot be compared", describe(n))
	}
	if isBoolean(n) {
		return fmt.Errorf("value '%s' cannot be compared", describe(n))
	}
	return nil
}

func ordered(cmp tokKind, l, r *node) (*node, error) {
	if err := checkOrdered(l); err != nil {
		return nil, err
	}
	if err := checkOrdered(r); err != nil {
		return nil, err
	}
	return &node{op: opCmp, cmp: cmp, l: l, r: r}, nil
}

func (p *parser) comparison() (*node, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		k, err := p.peekKind(0)
		if err != nil {
			return nil, err
		}
		not := false
		if k == tNot {
			k2, err := p.peekKind(1)
			if err != nil {
				return nil, err
			}
			switch k2 {
			case tBetween, tIn, tContains, tStartsWith, tEndsWith:
				not, k = true, k2
				p.lex.next()
			default:
				return left, nil
			}
		}
		switch k {
		case tGt, tGe, tLt, tLe:
			p.lex.next()
			right, err := p.unary()
			if err != nil {
				return nil, err
			}
			if left, err = ordered(k, left, right); err != nil {
				return nil, err
			}
		case tBetween:
			p.lex.next()
			low, err := p.unary()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tAnd); err != nil {
				return nil, err
			}
			high, err := p.unary()
			if err != nil {
				return nil, err
			}
			if left, err = between(not, left, low, high); err != nil {
				return nil, err
			}
		case tIn:
			p.lex.next()
			if left, err = p.in(not, left); err != nil {
				return nil, err
			}
		case tContains, tStartsWith, tEndsWith:
			p.lex.next()
			t, err := p.expect(tString)
			if err != nil {
				return nil, err
			}
			left = &node{op: opStr, cmp: k, l: left, r: &node{op: opConst, v: value{k: kString, s: []byte(t.text)}}, not: not}
		default:
			return left, nil
		}
	}
}

// between is createBetween / createNotBetween.
func between(not bool, v, low, high *node) (*node, error) {
	if !not && low.op == opConst && high.op == opConst {
		lc, hc := low, high
		if lc.v.k == kNull || hc.v.k == kNull {
			return nil, fmt.Errorf("illegal values of between, values can not be null")
		}
		c, ok := compare(hc.v, lc.v)
		if !ok {
			return nil, fmt.Errorf("illegal values of between: %s and %s cannot be compared", describe(low), describe(high))
		}
		if c < 0 {
			return nil, fmt.Errorf("illegal values of between, left value(%s) must less than or equal to right value(%s)",
				describe(low), describe(high))
		}
	}
	if not {
		l, err := ordered(tLt, v, low)
		if err != nil {
			return nil, err
		}
		r, err := ordered(tGt, v, high)
		if err != nil {
			return nil, err
		}
		return &node{op: opOr, l: l, r: r, between: fusable(v, low, high)}, nil
	}
	l, err := ordered(tGe, v, low)
	if err != nil {
		return nil, err
	}
	r, err := ordered(tLe, v, high)
	if err != nil {
		return nil, err
	}
	return &node{op: opAnd, l: l, r: r, between: fusable(v, low, high)}, nil
}

// fusable reports whether a BETWEEN of v, low and high can convert the
// property once for both comparisons: v is a property and the bounds are
// numbers of one type, so both comparisons convert it the same way.
func fusable(v, low, high *node) bool {
	if v.op != opProp || low.op != opConst || high.op != opConst || low.v.k != high.v.k {
		return false
	}
	switch low.v.k {
	case kInt, kLong, kDouble:
		return true
	}
	return false
}

// in reads "(" 'a' { "," 'b' } ")" after IN.
func (p *parser) in(not bool, left *node) (*node, error) {
	if _, err := p.expect(tLParen); err != nil {
		return nil, err
	}
	var list []string
	for {
		t, err := p.expect(tString)
		if err != nil {
			return nil, err
		}
		list = append(list, t.text)
		t, err = p.lex.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tRParen {
			break
		}
		if t.kind != tComma {
			return nil, unexpected(t, ", or )")
		}
	}
	if left.op != opProp {
		return nil, fmt.Errorf("expected a property for In expression, got: %s", describe(left))
	}
	return newInNode(left, list, not), nil
}

func (p *parser) unary() (*node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	k, err := p.peekKind(0)
	if err != nil {
		return nil, err
	}
	switch k {
	case tPlus:
		p.lex.next()
		return p.unary()
	case tMinus:
		p.lex.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		// Not folded into a constant even for a number: RocketMQ checks
		// constants, not negations, at compile time.
		return &node{op: opNeg, l: x}, nil
	case tNot:
		p.lex.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if x, err = asBoolean(x); err != nil {
			return nil, err
		}
		return &node{op: opNot, l: x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (*node, error) {
	t, err := p.lex.next()
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tString:
		return &node{op: opConst, v: value{k: kString, s: []byte(t.text)}}, nil
	case tDecimal:
		return decimal(t.text)
	case tFloat:
		return float(t.text)
	case tTrue:
		return trueConst, nil
	case tFalse:
		return falseConst, nil
	case tNull:
		return nullConst, nil
	case tID:
		slot, ok := p.slots[t.text]
		if !ok {
			slot = len(p.names)
			p.slots[t.text] = slot
			p.names = append(p.names, t.text)
		}
		return &node{op: opProp, slot: slot, name: t.text}, nil
	case tLParen:
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, fmt.Errorf("nested deeper than %d", maxDepth)
		}
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, unexpected(t, "a value, a name or (")
}

// decimal is ConstantExpression.createFromDecimal: a long, kept as an
// int when it fits one.
func decimal(text string) (*node, error) {
	n, err := strconv.ParseInt(strings.TrimRight(text, "lL"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s is not a long", text)
	}
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return &node{op: opConst, v: value{k: kInt, i: n}}, nil
	}
	return &node{op: opConst, v: value{k: kLong, i: n}}, nil
}

// float is ConstantExpression.createFloat, which refuses values above
// Double.MAX_VALUE and below Double.MIN_VALUE (so also 0).
func float(text string) (*node, error) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("%s is not a number", text)
	}
	if f > math.MaxFloat64 {
		return nil, fmt.Errorf("%s is greater than %g", text, math.MaxFloat64)
	}
	if f < math.SmallestNonzeroFloat64 {
		return nil, fmt.Errorf("%s is less than %g", text, math.SmallestNonzeroFloat64)
	}
	return &node{op: opConst, v: value{k: kDouble, f: f}}, nil
}
