package filter

import (
	"errors"
	"testing"
)

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"a = 1", "a > 1 AND b < 2.5 OR NOT (c = 'x')", "a BETWEEN 1 AND 2", "a NOT IN ('x', 'y')",
		"a IS NOT NULL", "TAGS = 'TagA' AND b CONTAINS 'z'", "-a > -1L", "a = 1 -- c\n", "/* x */ a",
		"a NOT BETWEEN 1.5 AND 2.5", "a BETWEEN 1L AND 2L", "((((a))))", "a = 'it''s'", ".5e3 < a", "NOT NOT TRUE", "a = 1 b", "a IN ('1','2','3','4','5','6')",
	} {
		f.Add(s, []byte("a\x011\x02b\x02x\x01\x02c\x01x\x02TAGS\x01TagA\x02"))
	}
	f.Fuzz(func(t *testing.T, expr string, props []byte) {
		e, err := Compile(expr)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		got := e.Match(props) // must not panic
		if generic := e.matchGeneric(props); generic != got {
			t.Fatalf("Match %v, through eval alone %v", got, generic)
		}
		if again := e.Match(props); again != got {
			t.Fatal("Match is not deterministic")
		}
		// Compiling the same text again gives the same verdict.
		e2, err := Compile(expr)
		if err != nil || e2.Match(props) != got {
			t.Fatalf("recompiling %q: %v", expr, err)
		}
	})
}
