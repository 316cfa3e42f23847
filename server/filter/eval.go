package filter

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/rocketstore/rocketstore/message"
)

// kind is the Java type of a value: null, Boolean, Integer, Long, Double
// or String. Property values are Strings; literals are the rest.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kLong
	kDouble
	kString
)

// value is one evaluated operand. s aliases the expression or the message
// properties; it is only valid during Match.
type value struct {
	s []byte
	i int64 // kInt and kLong
	f float64
	k kind
	b bool
}

var (
	nullValue  = value{}
	trueValue  = value{k: kBool, b: true}
	falseValue = value{k: kBool}
)

func boolValue(b bool) value {
	if b {
		return trueValue
	}
	return falseValue
}

// op is what a node computes.
type op uint8

const (
	opConst op = iota
	opProp     // a property's value
	opNeg      // -x
	opCast     // a property used as a boolean (UnaryExpression.createBooleanCast)
	opNot      // NOT x
	opAnd
	opOr
	opEq  // l = r (also IS NULL)
	opCmp // l cmp r, cmp one of tGt, tGe, tLt, tLe
	opIn  // prop [NOT] IN (list)
	opStr // prop [NOT] CONTAINS / STARTSWITH / ENDSWITH search
)

// node is one expression node. One struct rather than an interface per
// kind: evaluation is a switch over op, so the context handed down the
// recursion does not escape to the heap.
type node struct {
	op        op
	cmp       tokKind // opCmp: the comparison; opStr: the string operator
	not       bool    // opIn, opStr: negated
	between   bool    // opAnd, opOr: [NOT] BETWEEN of a property and two numbers of one type (see evalBetween)
	boolConst bool    // opConst: TRUE, FALSE or NULL (BooleanConstantExpression)
	v         value   // opConst
	slot      int     // opProp, opIn, opStr: the property's slot
	name      string  // opProp: the property
	l, r      *node
	list      [][]byte            // opIn, few items
	set       map[string]struct{} // opIn, many items
}

var (
	trueConst  = &node{op: opConst, boolConst: true, v: trueValue}
	falseConst = &node{op: opConst, boolConst: true, v: falseValue}
	nullConst  = &node{op: opConst, boolConst: true, v: nullValue}
)

// isBoolean reports whether n is a BooleanExpression in RocketMQ's sense.
func isBoolean(n *node) bool {
	switch n.op {
	case opConst:
		return n.boolConst
	case opProp, opNeg:
		return false
	}
	return true
}

// describe renders n for error messages.
func describe(n *node) string {
	switch n.op {
	case opConst:
		switch n.v.k {
		case kNull:
			return "NULL"
		case kBool:
			if n.v.b {
				return "TRUE"
			}
			return "FALSE"
		case kString:
			return "'" + strings.ReplaceAll(string(n.v.s), "'", "''") + "'"
		case kDouble:
			return fmt.Sprint(n.v.f)
		}
		return fmt.Sprint(n.v.i)
	case opProp:
		return n.name
	case opNeg:
		return "(- " + describe(n.l) + ")"
	case opCast:
		return describe(n.l)
	case opNot:
		return "(NOT " + describe(n.l) + ")"
	case opAnd:
		return "(" + describe(n.l) + " AND " + describe(n.r) + ")"
	case opOr:
		return "(" + describe(n.l) + " OR " + describe(n.r) + ")"
	case opEq:
		return "(" + describe(n.l) + " = " + describe(n.r) + ")"
	case opCmp:
		return "(" + describe(n.l) + " " + n.cmp.String() + " " + describe(n.r) + ")"
	case opIn:
		return "(" + describe(n.l) + " IN (...))"
	case opStr:
		return "(" + describe(n.l) + " " + n.cmp.String() + " ...)"
	}
	return "?"
}

// inSetMin is the list size from which IN looks items up in a map, as
// RocketMQ switches to a HashSet from five items.
const inSetMin = 5

func newInNode(prop *node, items []string, not bool) *node {
	n := &node{op: opIn, l: prop, slot: prop.slot, not: not}
	if len(items) < inSetMin {
		for _, it := range items {
			n.list = append(n.list, []byte(it))
		}
		return n
	}
	n.set = make(map[string]struct{}, len(items))
	for _, it := range items {
		n.set[it] = struct{}{}
	}
	return n
}

// ctx holds a message's properties during one Match.
type ctx struct {
	props []byte
	found uint16
	vals  [ctxSlots][]byte
}

func (c *ctx) prop(n *node) value {
	v, ok := c.raw(n)
	if !ok {
		return nullValue
	}
	return value{k: kString, s: v}
}

// raw is the value of the property n names, and whether it is there.
func (c *ctx) raw(n *node) ([]byte, bool) {
	if n.slot >= ctxSlots {
		return message.LookupProperty(c.props, n.name) // past the one pass
	}
	return c.vals[n.slot], c.found&(1<<n.slot) != 0
}

// Match evaluates the expression against a message's encoded properties
// (name 0x01 value 0x02 ..., as a record stores them) and reports whether
// it is TRUE. An evaluation error (a property that does not convert to a
// number it is compared with) is not a match, as in RocketMQ. It does not
// allocate.
func (e *Expression) Match(props []byte) bool {
	var c ctx
	c.props = props
	c.found = e.index.lookup(props, &c.vals)
	return evalBool(e.root, &c) == triTrue
}

// MatchString is Match of properties held in a string. It does not copy
// them: Match only reads its argument.
func (e *Expression) MatchString(props string) bool {
	return e.Match(unsafe.Slice(unsafe.StringData(props), len(props)))
}

// tri is a boolean node's result: Java's Boolean.FALSE, Boolean.TRUE,
// null, or an exception.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triNull
	triErr
)

func toTri(v value, ok bool) tri {
	switch {
	case !ok:
		return triErr
	case v.k == kNull:
		return triNull
	case v.k == kBool && v.b:
		return triTrue
	case v.k == kBool:
		return triFalse
	}
	return triErr // a non-Boolean where a Boolean is cast: ClassCastException
}

// evalBool computes a boolean node as eval would, without carrying values
// through the logic operators.
func evalBool(n *node, c *ctx) tri {
	switch n.op {
	case opAnd, opOr:
		if n.between {
			return evalBetween(n, c)
		}
		stop := triFalse // the value that decides: TRUE for OR, FALSE for AND
		if n.op == opOr {
			stop = triTrue
		}
		l := evalBool(n.l, c)
		if l == triErr || l == stop {
			return l
		}
		r := evalBool(n.r, c)
		if r == triErr || r == stop {
			return r
		}
		if l == triNull || r == triNull {
			return triNull
		}
		return 1 - stop
	case opNot:
		switch x := evalBool(n.l, c); x {
		case triTrue:
			return triFalse
		case triFalse:
			return triTrue
		default:
			return x
		}
	case opEq:
		if n.l.op == opProp && n.r.op == opConst && n.r.v.k == kString {
			// property = 'string', the usual shape, without compare.
			x, ok := c.raw(n.l)
			if !ok {
				return triNull
			}
			return triOf(bytes.Equal(x, n.r.v.s))
		}
		return evalEq(n, c)
	case opCmp:
		if n.l.op == opProp && n.r.op == opConst {
			return propCmp(n, c)
		}
		return evalCmp(n, c)
	case opIn:
		x, ok := c.raw(n.l)
		if !ok {
			return triNull
		}
		return triOf(n.contains(x) != n.not)
	}
	return toTri(eval(n, c))
}

// eval computes n; ok is false when RocketMQ's evaluation throws, which
// ends the evaluation of the whole expression.
func eval(n *node, c *ctx) (value, bool) {
	switch n.op {
	case opConst:
		return n.v, true
	case opProp:
		return c.prop(n), true
	case opNeg:
		x, ok := eval(n.l, c)
		if !ok {
			return x, false
		}
		return negate(x), true
	case opCast:
		x, ok := eval(n.l, c)
		if !ok || x.k == kNull {
			return x, ok
		}
		return boolValue(x.k == kBool && x.b), true
	case opNot:
		x, ok := eval(n.l, c)
		if !ok || x.k == kNull {
			return x, ok
		}
		if x.k != kBool {
			return x, false // a ClassCastException in RocketMQ
		}
		return boolValue(!x.b), true
	case opAnd, opOr:
		return evalLogic(n, c)
	case opEq:
		return fromTri(evalEq(n, c))
	case opCmp:
		return fromTri(evalCmp(n, c))
	case opIn:
		x := c.prop(n.l)
		if x.k == kNull {
			return nullValue, true
		}
		return boolValue(n.contains(x.s) != n.not), true
	case opStr:
		if len(n.r.v.s) == 0 {
			return falseValue, true
		}
		x, ok := eval(n.l, c)
		if !ok {
			return x, false
		}
		if x.k != kString {
			return falseValue, true
		}
		var hit bool
		switch n.cmp {
		case tContains:
			hit = bytes.Contains(x.s, n.r.v.s)
		case tStartsWith:
			hit = bytes.HasPrefix(x.s, n.r.v.s)
		default:
			hit = bytes.HasSuffix(x.s, n.r.v.s)
		}
		return boolValue(hit != n.not), true
	}
	return nullValue, false
}

func (n *node) contains(s []byte) bool {
	if n.set != nil {
		_, ok := n.set[string(s)] // no allocation for a map lookup
		return ok
	}
	for _, it := range n.list {
		if bytes.Equal(it, s) {
			return true
		}
	}
	return false
}

// evalLogic is LogicExpression's AND and OR: three-valued, short-circuit.
func evalLogic(n *node, c *ctx) (value, bool) {
	stop := n.op == opOr // the value that decides: TRUE for OR, FALSE for AND
	l, ok := eval(n.l, c)
	if !ok {
		return l, false
	}
	if l.k == kBool && l.b == stop {
		return boolValue(stop), true
	}
	r, ok := eval(n.r, c)
	if !ok {
		return r, false
	}
	if r.k == kBool && r.b == stop {
		return boolValue(stop), true
	}
	if l.k == kNull || r.k == kNull {
		return nullValue, true
	}
	return boolValue(!stop), true
}

// operands evaluates a binary node's operands, the usual property and
// constant without the recursion.
func operands(n *node, c *ctx) (l, r value, ok bool) {
	if n.l.op == opProp {
		l = c.prop(n.l)
	} else if l, ok = eval(n.l, c); !ok {
		return l, r, false
	}
	if n.r.op == opConst {
		r = n.r.v
	} else if r, ok = eval(n.r, c); !ok {
		return l, r, false
	}
	return l, r, true
}

// evalEq is doCreateEqual's evaluation.
func evalEq(n *node, c *ctx) tri {
	l, r, ok := operands(n, c)
	if !ok {
		return triErr
	}
	switch {
	case l.k == kNull && r.k == kNull:
		return triTrue
	case l.k == kNull:
		return triNull
	case r.k == kNull:
		return triFalse
	}
	d, ok := compare(l, r)
	if !ok {
		return triErr
	}
	return triOf(d == 0)
}

// evalCmp is ComparisonExpression.evaluate for >, >=, < and <=: two
// strings are compared as doubles.
func evalCmp(n *node, c *ctx) tri {
	l, r, ok := operands(n, c)
	if !ok {
		return triErr
	}
	if l.k == kNull || r.k == kNull {
		return triNull
	}
	var d int
	if l.k == kString && r.k == kString {
		lf, ok1 := parseJavaDouble(l.s)
		rf, ok2 := parseJavaDouble(r.s)
		if !ok1 || !ok2 {
			return triErr
		}
		d = compareDouble(lf, rf)
	} else if d, ok = compare(l, r); !ok {
		return triErr
	}
	switch n.cmp {
	case tGt:
		return triOf(d > 0)
	case tGe:
		return triOf(d >= 0)
	case tLt:
		return triOf(d < 0)
	}
	return triOf(d <= 0)
}

// propCmp is evalCmp for a property against a number, the usual shape.
func propCmp(n *node, c *ctx) tri {
	x, r := c.prop(n.l), n.r.v
	if x.k == kNull || r.k == kNull {
		return triNull
	}
	var d int
	switch r.k {
	case kInt, kLong:
		v, ok := parseJavaInt(x.s, r.k == kInt)
		if !ok {
			return triErr
		}
		d = compareInt(v, r.i)
	case kDouble:
		f, ok := parseJavaDouble(x.s)
		if !ok {
			return triErr
		}
		d = compareDouble(f, r.f)
	default:
		return evalCmp(n, c)
	}
	switch n.cmp {
	case tGt:
		return triOf(d > 0)
	case tGe:
		return triOf(d >= 0)
	case tLt:
		return triOf(d < 0)
	}
	return triOf(d <= 0)
}

// evalBetween is a fusable BETWEEN (v >= low AND v <= high) or NOT
// BETWEEN (v < low OR v > high), n's two comparisons, converting the
// property once: NULL when it is missing, an error when it does not
// convert (the first comparison throws), else both comparisons at once.
func evalBetween(n *node, c *ctx) tri {
	x, ok := c.raw(n.l.l)
	if !ok {
		return triNull
	}
	low, high := &n.l.r.v, &n.r.r.v
	var dl, dh int
	if low.k == kDouble {
		f, ok := parseJavaDouble(x)
		if !ok {
			return triErr
		}
		dl, dh = compareDouble(f, low.f), compareDouble(f, high.f)
	} else {
		v, ok := parseJavaInt(x, low.k == kInt)
		if !ok {
			return triErr
		}
		dl, dh = compareInt(v, low.i), compareInt(v, high.i)
	}
	if n.op == opOr {
		return triOf(dl < 0 || dh > 0)
	}
	return triOf(dl >= 0 && dh <= 0)
}

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

// fromTri is a boolean node's result as a value, for eval.
func fromTri(t tri) (value, bool) {
	switch t {
	case triTrue:
		return trueValue, true
	case triFalse:
		return falseValue, true
	case triNull:
		return nullValue, true
	}
	return nullValue, false
}

// negate is UnaryExpression.createNegate's evaluation: numbers negated in
// their type, anything else NULL.
func negate(x value) value {
	switch x.k {
	case kInt:
		return value{k: kInt, i: int64(-int32(x.i))}
	case kLong:
		return value{k: kLong, i: -x.i}
	case kDouble:
		return value{k: kDouble, f: -x.f}
	}
	return nullValue
}

// compare is ComparisonExpression.__compare with string conversion on (as
// SelectorParser.parse sets it): values of different types are converted
// to the wider one, a string to the other side's type; types that do not
// convert compare as -1. ok is false where RocketMQ throws: a string that
// does not parse as the number, or a Boolean against a String.
func compare(l, r value) (int, bool) {
	if l.k == r.k {
		switch l.k {
		case kBool:
			return compareBool(l.b, r.b), true
		case kInt, kLong:
			return compareInt(l.i, r.i), true
		case kDouble:
			return compareDouble(l.f, r.f), true
		case kString:
			return bytes.Compare(l.s, r.s), true
		}
		return 0, true
	}
	switch l.k {
	case kBool:
		if r.k == kString {
			return 0, false
		}
	case kInt, kLong:
		switch r.k {
		case kInt, kLong:
			return compareInt(l.i, r.i), true
		case kDouble:
			return compareDouble(float64(l.i), r.f), true
		case kString:
			n, ok := parseJavaInt(r.s, l.k == kInt)
			if !ok {
				return 0, false
			}
			return compareInt(l.i, n), true
		}
	case kDouble:
		switch r.k {
		case kInt, kLong:
			return compareDouble(l.f, float64(r.i)), true
		case kString:
			f, ok := parseJavaDouble(r.s)
			if !ok {
				return 0, false
			}
			return compareDouble(l.f, f), true
		}
	case kString:
		switch r.k {
		case kBool:
			return compareBool(equalFoldTrue(l.s), r.b), true
		case kInt, kLong:
			n, ok := parseJavaInt(l.s, r.k == kInt)
			if !ok {
				return 0, false
			}
			return compareInt(n, r.i), true
		case kDouble:
			f, ok := parseJavaDouble(l.s)
			if !ok {
				return 0, false
			}
			return compareDouble(f, r.f), true
		}
	}
	return -1, true
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareDouble is Double.compare: -0.0 below 0.0, NaN equal to itself
// and above everything.
func compareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if a != a {
		ab = 0x7ff8000000000000
	}
	if b != b {
		bb = 0x7ff8000000000000
	}
	return compareInt(ab, bb)
}

// equalFoldTrue is Boolean.valueOf(String): "true" in any case.
func equalFoldTrue(s []byte) bool {
	return len(s) == 4 && (s[0]|0x20) == 't' && (s[1]|0x20) == 'r' && (s[2]|0x20) == 'u' && (s[3]|0x20) == 'e'
}
