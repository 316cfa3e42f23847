package console

import (
	"fmt"
	"strings"
	"testing"
)

func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"now", "1700000000000", "2026-01-02T03:04:05", "2026-01-02T03:04", "2026-01-02 03:04:05", "", "-5", "9999999999999999999"} {
		f.Add(s, "-60")
	}
	f.Fuzz(func(t *testing.T, s, tz string) {
		ms, err := parseWhen(s, tz)
		if err == nil && ms < 0 && s != "now" {
			t.Fatalf("%q gave a negative time %d", s, ms)
		}
	})
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/topics", "//evil.example", `/\evil`, "https://evil.example/", "", "/topic?t=a&b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := safeNext(s)
		if !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || strings.Contains(n, `\`) {
			t.Fatalf("safeNext(%q) = %q leads off the console", s, n)
		}
	})
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"TopicTest", "%RETRY%g", "a b", "<script>", strings.Repeat("x", 128), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validName("topic", s) == nil && strings.ContainsAny(s, "<>\"' &/\\") {
			t.Fatalf("%q passed", s)
		}
	})
}

// BenchmarkNames_Filter is the filter of a topics page over 25,000 names.
func BenchmarkNames_Filter(b *testing.B) {
	list := make([]string, 25000)
	for i := range list {
		list[i] = fmt.Sprintf("ScaleTopic%05d", i)
	}
	n := newNames(list, nil, topicKind)
	b.ReportAllocs()
	for b.Loop() {
		if got := n.filter("topic1234", "normal"); len(got) != 10 { // ScaleTopic12340..12349
			b.Fatal(len(got))
		}
	}
	b.ReportMetric(25000, "names/op")
}
