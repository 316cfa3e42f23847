package filter

import (
	"fmt"
	"strings"
)

// tokKind is a token of SelectorParser.jj.
type tokKind uint8

const (
	tEOF tokKind = iota
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
	tDecimal
	tFloat
	tString
	tID
	tEq // =
	tNe // <>
	tGt // >
	tGe // >=
	tLt // <
	tLe // <=
	tLParen
	tRParen
	tComma
	tPlus
	tMinus
)

var keywords = map[string]tokKind{
	"NOT": tNot, "AND": tAnd, "OR": tOr, "BETWEEN": tBetween, "IN": tIn,
	"TRUE": tTrue, "FALSE": tFalse, "NULL": tNull, "IS": tIs,
	"CONTAINS": tContains, "STARTSWITH": tStartsWith, "ENDSWITH": tEndsWith,
}

var tokNames = [...]string{
	tEOF: "end of expression", tNot: "NOT", tAnd: "AND", tOr: "OR", tBetween: "BETWEEN", tIn: "IN",
	tTrue: "TRUE", tFalse: "FALSE", tNull: "NULL", tIs: "IS", tContains: "CONTAINS",
	tStartsWith: "STARTSWITH", tEndsWith: "ENDSWITH", tDecimal: "number", tFloat: "number",
	tString: "string", tID: "name", tEq: "=", tNe: "<>", tGt: ">", tGe: ">=", tLt: "<", tLe: "<=",
	tLParen: "(", tRParen: ")", tComma: ",", tPlus: "+", tMinus: "-",
}

func (k tokKind) String() string { return tokNames[k] }

type token struct {
	kind tokKind
	text string // the image; a string literal's decoded value
	pos  int    // byte offset in the expression
}

// lexer reads tokens on demand, as JavaCC's token manager does: a
// character no token starts with is an error only once the parser asks
// for the token holding it.
type lexer struct {
	src string
	pos int
	buf []token // tokens read ahead
}

// peek returns the token i places ahead (0: the next one).
func (l *lexer) peek(i int) (token, error) {
	for len(l.buf) <= i {
		t, err := l.scan()
		if err != nil {
			return token{}, err
		}
		l.buf = append(l.buf, t)
	}
	return l.buf[i], nil
}

// next consumes the next token.
func (l *lexer) next() (token, error) {
	t, err := l.peek(0)
	if err == nil {
		l.buf = l.buf[1:]
	}
	return t, err
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scan reads one token from l.pos, skipping white space and comments.
func (l *lexer) scan() (token, error) {
	s := l.src
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case strings.HasPrefix(s[l.pos:], "--"):
			// A line comment must end with a line break (LINE_COMMENT);
			// otherwise "-" "-" are two tokens.
			end := strings.IndexAny(s[l.pos:], "\r\n")
			if end < 0 {
				return l.punct()
			}
			l.pos += end + 1
		case strings.HasPrefix(s[l.pos:], "/*"):
			end := strings.Index(s[l.pos+2:], "*/")
			if end < 0 {
				return token{}, fmt.Errorf("unterminated comment at %d", l.pos)
			}
			l.pos += 2 + end + 2
		default:
			return l.token()
		}
	}
	return token{kind: tEOF, pos: l.pos}, nil
}

func (l *lexer) token() (token, error) {
	s, start := l.src, l.pos
	c := s[start]
	switch {
	case isIDStart(c):
		end := start + 1
		for end < len(s) && (isIDStart(s[end]) || isDigit(s[end])) {
			end++
		}
		l.pos = end
		word := s[start:end]
		if k, ok := keywords[strings.ToUpper(word)]; ok {
			return token{kind: k, text: word, pos: start}, nil
		}
		return token{kind: tID, text: word, pos: start}, nil
	case isDigit(c) || c == '.' && start+1 < len(s) && isDigit(s[start+1]):
		return l.number()
	case c == '\'':
		var sb strings.Builder
		for i := start + 1; i < len(s); i++ {
			if s[i] != '\'' {
				sb.WriteByte(s[i])
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' {
				sb.WriteByte('\'')
				i++
				continue
			}
			l.pos = i + 1
			return token{kind: tString, text: sb.String(), pos: start}, nil
		}
		return token{}, fmt.Errorf("unterminated string at %d", start)
	}
	return l.punct()
}

func (l *lexer) punct() (token, error) {
	s, start := l.src, l.pos
	two := ""
	if start+2 <= len(s) {
		two = s[start : start+2]
	}
	var k tokKind
	n := 1
	switch {
	case two == "<>":
		k, n = tNe, 2
	case two == ">=":
		k, n = tGe, 2
	case two == "<=":
		k, n = tLe, 2
	default:
		switch s[start] {
		case '=':
			k = tEq
		case '>':
			k = tGt
		case '<':
			k = tLt
		case '(':
			k = tLParen
		case ')':
			k = tRParen
		case ',':
			k = tComma
		case '+':
			k = tPlus
		case '-':
			k = tMinus
		default:
			return token{}, fmt.Errorf("unexpected character %q at %d", s[start], start)
		}
	}
	l.pos += n
	return token{kind: k, text: s[start : start+n], pos: start}, nil
}

// number reads DECIMAL_LITERAL ("0" | [1-9][0-9]* [lL]?) or
// FLOATING_POINT_LITERAL (digits "." digits* exp? | "." digits exp? |
// digits exp), the longest that matches.
func (l *lexer) number() (token, error) {
	s, start := l.src, l.pos
	i := start
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intEnd := i
	isFloat := false
	if i < len(s) && s[i] == '.' {
		isFloat = true
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if e := exponent(s, i); e > i {
		isFloat, i = true, e
	}
	if isFloat {
		l.pos = i
		return token{kind: tFloat, text: s[start:i], pos: start}, nil
	}
	// A decimal: "0" alone, or no leading zero.
	end := intEnd
	if s[start] == '0' {
		end = start + 1
	} else if end < len(s) && (s[end] == 'l' || s[end] == 'L') {
		end++
	}
	l.pos = end
	return token{kind: tDecimal, text: s[start:end], pos: start}, nil
}

// exponent returns the end of an exponent ("E" [+-]? digits, any case)
// at i, or i if there is none.
func exponent(s string, i int) int {
	if i >= len(s) || s[i] != 'e' && s[i] != 'E' {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	k := j
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == j {
		return i
	}
	return k
}
