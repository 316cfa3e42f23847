package filter

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/rocketstore/rocketstore/message"
)

func props(kv ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = message.AppendProperty(b, kv[i], kv[i+1])
	}
	return b
}

func TestMatch(t *testing.T) {
	msg := props("a", "1", "b", "hello", "c", "2.5", "TAGS", "TagA", "big", "3000000000", "neg", "-7", "t", "TRUE", "x", "abc")
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{"a = 1", true},
		{"a = 2", false},
		{"a <> 2", true},
		{"a = '1'", true},
		{"b = 'hello'", true},
		{"b = 'Hello'", false},
		{"b <> 'hello'", false},
		{"a > 0", true},
		{"a >= 1", true},
		{"a < 1", false},
		{"a <= 1", true},
		{"c > 2", false}, // Integer.valueOf("2.5") throws: no match
		{"c > 2.0", true},
		{"c < 3.0", true},
		{"c = 2.5", true},
		{"big > 2147483647", false}, // an Integer literal: Integer.valueOf("3000000000") throws
		{"big > 2147483648", true},  // a Long literal: Long.valueOf
		{"big > 1", false},          // Integer.valueOf("3000000000") throws
		{"neg < 0", true},
		{"neg = -7", true},
		{"a BETWEEN 0 AND 2", true},
		{"a BETWEEN 2 AND 3", false},
		{"a NOT BETWEEN 2 AND 3", true},
		{"a NOT BETWEEN 0 AND 3", false},
		{"c BETWEEN 2.0 AND 3.0", true},
		{"b IN ('x', 'hello')", true},
		{"b IN ('x', 'y')", false},
		{"b NOT IN ('x', 'y')", true},
		{"b IN ('1','2','3','4','5','hello')", true},
		{"b IN ('1','2','3','4','5','6')", false},
		{"missing IN ('x')", false},
		{"missing NOT IN ('x')", false}, // NULL: unknown
		{"missing IS NULL", true},
		{"missing IS NOT NULL", false},
		{"a IS NULL", false},
		{"a IS NOT NULL", true},
		{"missing = 1", false},
		{"missing <> 1", false}, // NOT(NULL) is NULL
		{"NOT (missing = 1)", false},
		{"NOT (a = 1)", false},
		{"NOT (a = 2)", true},
		{"a = 1 AND b = 'hello'", true},
		{"a = 1 AND b = 'x'", false},
		{"a = 2 OR b = 'hello'", true},
		{"a = 2 OR b = 'x'", false},
		{"missing = 1 OR a = 1", true},   // NULL OR TRUE
		{"missing = 1 AND a = 2", false}, // NULL AND FALSE
		{"missing = 1 OR a = 2", false},  // NULL
		{"(a = 1 OR a = 2) AND (b = 'hello')", true},
		{"TAGS = 'TagA'", true},
		{"TAGS IN ('TagA', 'TagB')", true},
		{"TAGS = 'TagB'", false},
		{"t = TRUE", true}, // Boolean.valueOf("TRUE")
		{"b = TRUE", false},
		{"b = FALSE", true},
		{"TRUE", true},
		{"FALSE", false},
		{"TRUE AND a = 1", true},
		{"t", false}, // a String property is never a Boolean
		{"x > 1", false},
		{"b CONTAINS 'ell'", true},
		{"b NOT CONTAINS 'ell'", false},
		{"b STARTSWITH 'he'", true},
		{"b ENDSWITH 'lo'", true},
		{"b ENDSWITH 'he'", false},
		{"missing NOT CONTAINS 'x'", false},
		{"b CONTAINS ''", false},
		{"a = 1 AND b = 'hello' AND c > 2.0", true},
		{"and1 = 1 OR a = 1", true},
		{"a = 1 garbage", true}, // trailing tokens are not read, as in RocketMQ
		{"a = 01", false},       // "a = 0", then "1" ignored
		{"a = 1e", true},        // "a = 1", then the name "e"
		{"a = 1 -- no line end", true},
		{"a=1", true},
		{"a = 1L", true},
		{"-a = -1", false}, // negating a String is NULL
		{"a > -1", true},
		{"a = 1.0", true},
		{"a = 1 -- note\n", true},
		{"/* c */ a = 1", true},
		{"b = 'it''s'", false},
		{"(a > 0) = TRUE", true},
		{"a BETWEEN -1 AND 1", true},
		{"c > a", true}, // two strings ordered as doubles
		{"c > b", false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := Compile(tc.expr)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got := e.Match(msg); got != tc.want {
				t.Fatalf("Match = %v, want %v", got, tc.want)
			}
			if got := e.matchGeneric(msg); got != tc.want {
				t.Fatalf("through eval alone: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompile_Refused(t *testing.T) {
	for _, expr := range []string{
		"", "   ", "a =", "a = ", "= 1", "a == 1", "a != 1", "a = 1 AND", "(a = 1", "a = 1)", // ")" alone ends nothing
		"a IN ()", "a IN (1, 2)", "1 IN ('a')", "a BETWEEN 1", "a BETWEEN 2 AND 1", "a BETWEEN 'x' AND 'y'",
		"a > 'x'", "a > TRUE", "a = NULL", "NULL = a", "TRUE = 1", "a IS 1", "a IS NOT 1",
		"'abc'", "1", "a = 1 OR 2", "NOT 1", "a = 0.0", "a > 1e999", "a = 99999999999999999999",
		"a # 1", "a = 1 # 1", "a = 'open", "/* open", "-a", "a = 1 AND #",
		"a CONTAINS 1", "a > (b > 1)",
	} {
		if expr == "a = 1)" {
			// Accepted by RocketMQ: the ")" is past the selector.
			if _, err := Compile(expr); err != nil {
				t.Errorf("Compile(%q): %v, RocketMQ accepts it", expr, err)
			}
			continue
		}
		if _, err := Compile(expr); !errors.Is(err, ErrInvalid) {
			t.Errorf("Compile(%q) = %v, want ErrInvalid", expr, err)
		}
	}
}

func TestCompile_Names(t *testing.T) {
	e, err := Compile("a = 1 AND (b IS NULL OR a > 2) AND TAGS IN ('x')")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "TAGS"}; !slices.Equal(e.names, want) {
		t.Fatalf("names %v, want %v", e.names, want)
	}
}

func TestMatch_ManyProperties(t *testing.T) {
	// More names than one pass looks up: the rest are looked up one by one.
	kv := map[string]string{}
	expr := ""
	for i := range ctxSlots + 4 {
		name := "p" + string(rune('a'+i))
		kv[name] = "v"
		if expr != "" {
			expr += " AND "
		}
		expr += name + " = 'v'"
	}
	e, err := Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	var flat []string
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		flat = append(flat, k, kv[k])
	}
	if !e.Match(props(flat...)) {
		t.Fatal("no match with every property set")
	}
	flat[len(flat)-1] = "w"
	if e.Match(props(flat...)) {
		t.Fatal("match with the last property different")
	}
}

func TestMatch_DeepNesting(t *testing.T) {
	deep := ""
	for range maxDepth + 10 {
		deep += "("
	}
	if _, err := Compile(deep + "a = 1"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("deep nesting: %v", err)
	}
	nots := ""
	for range maxDepth + 10 {
		nots += "NOT "
	}
	if _, err := Compile(nots + "TRUE"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("deep NOT: %v", err)
	}
}

func TestParseJavaNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		is32 bool
		want int64
		ok   bool
	}{
		{"1", true, 1, true}, {"+1", true, 1, true}, {"-2147483648", true, -2147483648, true},
		{"2147483648", true, 0, false}, {"2147483648", false, 2147483648, true},
		{"-9223372036854775808", false, -9223372036854775808, true}, {"9223372036854775808", false, 0, false},
		{"", true, 0, false}, {"-", true, 0, false}, {" 1", true, 0, false}, {"1.0", true, 0, false},
	} {
		got, ok := parseJavaInt([]byte(tc.in), tc.is32)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseJavaInt(%q, %v) = %d, %v", tc.in, tc.is32, got, ok)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"1", true}, {" 1.5 ", true}, {"1e3", true}, {".5", true}, {"5.", true}, {"1.5f", true}, {"-2D", true},
		{"NaN", true}, {"-Infinity", true}, {"0x1.8p1", true}, {"1e999", true},
		{"", false}, {".", false}, {"e5", false}, {"inf", false}, {"1_000", false}, {"1e", false}, {"0x1.8", false}, {"abc", false},
	} {
		if _, ok := parseJavaDouble([]byte(tc.in)); ok != tc.ok {
			t.Errorf("parseJavaDouble(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
	}
}

func TestCache(t *testing.T) {
	c := NewCache(2)
	e1, err := c.Compile("a = 1")
	if err != nil {
		t.Fatal(err)
	}
	if e2, _ := c.Compile("a = 1"); e2 != e1 {
		t.Fatal("second Compile did not come from the cache")
	}
	if _, err := c.Compile("a ="); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad expression: %v", err)
	}
	if _, err := c.Compile("a ="); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cached bad expression: %v", err)
	}
	c.Compile("b = 1")
	if n := len(c.entries); n > 2 {
		t.Fatalf("%d entries in a cache of 2", n)
	}
}
