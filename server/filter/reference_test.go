package filter

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/message"
)

// matchGeneric is the reference Match is held to: the properties decoded
// into a map as RocketMQ decodes them (message.ParseProperties), and the
// expression computed by the value-based eval alone, without Match's one
// pass, BETWEEN fusion or boolean shortcuts.
func (e *Expression) matchGeneric(props []byte) bool {
	m := message.ParseProperties(string(props))
	var c ctx
	c.props = props
	for i, name := range e.names[:min(len(e.names), ctxSlots)] {
		if v, ok := m[name]; ok {
			c.vals[i] = []byte(v)
			c.found |= 1 << i
		}
	}
	v, ok := eval(e.root, &c)
	return ok && v.k == kBool && v.b
}

// differentialExprs cover every shortcut Match takes (property = string,
// property against a number, IN, fused BETWEEN of each number type, NOT
// BETWEEN) and the shapes that must not take them.
var differentialExprs = []string{
	"a = 'x'", "a = 1", "a = 1L", "a = 1.5", "a <> 'x'", "a > 1", "a >= 1L", "a < 2.5", "a <= -1",
	"a BETWEEN 1 AND 10", "a BETWEEN 1L AND 3000000000", "a BETWEEN 1 AND 3000000000", "a BETWEEN -1.5 AND 2.5",
	"a NOT BETWEEN 1 AND 10", "a NOT BETWEEN 1.0 AND 2.0", "a NOT BETWEEN 1 AND 2.5", "a BETWEEN b AND 10",
	"a IN ('x', 'y')", "a NOT IN ('1', '2', '3', '4', '5', 'x')", "a IS NULL", "b IS NOT NULL",
	"a BETWEEN 1 AND 10 AND region IN ('eu', 'us') AND TAGS = 'TagA'",
	"a = 1 OR b = 'x' AND NOT (c > 2.0)", "(a > b) = TRUE", "a > b", "a = b", "a OR b = 'x'", "NOT a",
	"a CONTAINS 'x' OR b STARTSWITH '1' OR c ENDSWITH 'A'", "-a > -1 OR a = 'x'", "TAGS = 'TagA' AND a IS NULL",
}

// differentialValues are property values that convert, convert only to
// some number types, or do not convert.
var differentialValues = []string{
	"1", "5", "10", "-1", "0", "+3", "3000000000", "-2147483648", "2147483648", "2.5", "-1.5", "1e1",
	"NaN", "-Infinity", "0x1p3", " 2 ", "1.5f", "x", "y", "TagA", "TRUE", "true", "us", "abc", "1_0",
}

// randomProps builds a properties string from a few names and values,
// with duplicates, names that are prefixes of others, and malformed pieces.
func randomProps(r *rand.Rand) []byte {
	names := []string{"a", "aa", "b", "c", "region", "TAGS", "A", "ab"}
	var p []byte
	for range r.IntN(8) {
		switch r.IntN(10) {
		case 0: // a piece without a value, or without a name
			p = append(p, names[r.IntN(len(names))]...)
			p = append(p, "\x01\x02\x01v\x02"[r.IntN(3):]...)
		case 1: // a piece with no separator at all
			p = append(p, names[r.IntN(len(names))]+"\x02"...)
		default:
			p = message.AppendProperty(p, names[r.IntN(len(names))], differentialValues[r.IntN(len(differentialValues))])
		}
	}
	if r.IntN(4) == 0 && len(p) > 0 {
		p = p[:len(p)-1] // the last separator missing
	}
	return p
}

// producerProps builds a producer's properties, the benchmark's shape:
// each of a, region and TAGS usually there, with values that match or not.
func producerProps(r *rand.Rand) []byte {
	p := message.AppendProperty(nil, message.PropertyUniqClientMessageIDKeyIndex, "7F0000011E8A18B4AAC2581CFF0B0000")
	for _, kv := range []struct {
		name   string
		values []string
	}{
		{"a", []string{"1", "5", "10", "11", "0", "x", "2.5"}},
		{"region", []string{"eu", "us", "cn"}},
		{"TAGS", []string{"TagA", "TagB"}},
	} {
		for range r.IntN(3) { // missing, once, or a duplicate
			p = message.AppendProperty(p, kv.name, kv.values[r.IntN(len(kv.values))])
		}
	}
	return message.AppendProperty(p, "KEYS", "order-1")
}

// TestMatch_Differential holds Match to the reference on random property
// sets for expressions that exercise every shortcut.
func TestMatch_Differential(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 1))
	matched := map[string]int{}
	for _, expr := range differentialExprs {
		e, err := Compile(expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", expr, err)
		}
		for range 2000 {
			p := randomProps(r)
			if r.IntN(2) == 0 {
				p = producerProps(r)
			}
			got, want := e.Match(p), e.matchGeneric(p)
			if got != want {
				t.Fatalf("%q on %q: Match %v, reference %v", expr, strings.NewReplacer("\x01", "=", "\x02", ";").Replace(string(p)), got, want)
			}
			if got {
				matched[expr]++
			}
		}
	}
	// The property sets must make each expression go both ways, or the
	// comparison says little.
	for _, expr := range differentialExprs {
		if n := matched[expr]; n == 0 || n == 2000 {
			t.Errorf("%q matched %d of 2000 random property sets", expr, n)
		}
	}
}
