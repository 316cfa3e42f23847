package fastjson

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// writeOffsets writes a ConsumerOffsetManager with one empty dataVersion-less
// table, the way the tests below expect.
func writeOffsets(pretty bool) string {
	w := NewWriter(nil, pretty)
	w.BeginObject()
	w.Key("offsetTable")
	w.BeginObject()
	w.Key("%RETRY%cg@cg")
	w.BeginIntMap()
	w.IntKey(0)
	w.Int(0)
	w.End()
	w.Key("TopicTest@cg")
	w.BeginIntMap()
	w.IntKey(0)
	w.Int(123)
	w.IntKey(1)
	w.Int(456)
	w.End()
	w.Key("empty@cg")
	w.BeginIntMap()
	w.End()
	w.End()
	w.End()
	return string(w.Bytes())
}

// The expected texts below are what fastjson 1.2.83 (JSON.toJSONString
// with and without PrettyFormat) printed for the same Java objects.
func TestWriter_Offsets_MatchesFastjson(t *testing.T) {
	require.Equal(t, `{"offsetTable":{"%RETRY%cg@cg":{0:0},"TopicTest@cg":{0:123,1:456},"empty@cg":{}}}`, writeOffsets(false))
	require.Equal(t, "{\n"+
		"\t\"offsetTable\":{\n"+
		"\t\t\"%RETRY%cg@cg\":{0:0\n"+
		"\t\t},\n"+
		"\t\t\"TopicTest@cg\":{0:123,1:456\n"+
		"\t\t},\n"+
		"\t\t\"empty@cg\":{}\n"+
		"\t}\n"+
		"}", writeOffsets(true))
}

func writeGroup(pretty bool) string {
	w := NewWriter(nil, pretty)
	w.BeginObject()
	w.Key("attributes")
	w.BeginObject()
	w.End()
	w.Key("groupRetryPolicy")
	w.BeginObject()
	w.Key("customizedRetryPolicy")
	w.BeginObject()
	w.Key("next")
	w.BeginArray()
	w.Int(1000)
	w.Int(5000)
	w.End()
	w.End()
	w.Key("type")
	w.String("CUSTOMIZED")
	w.End()
	w.Key("notify")
	w.Bool(true)
	w.Key("subscriptionDataSet")
	w.BeginArray()
	w.BeginObject()
	w.Key("expression")
	w.String("*")
	w.Key("version")
	w.Int(5)
	w.End()
	w.End()
	w.Key("empty")
	w.BeginArray()
	w.End()
	w.End()
	return string(w.Bytes())
}

func TestWriter_NestedObjectsAndSets_MatchFastjson(t *testing.T) {
	require.Equal(t, `{"attributes":{},"groupRetryPolicy":{"customizedRetryPolicy":{"next":[1000,5000]},"type":"CUSTOMIZED"},`+
		`"notify":true,"subscriptionDataSet":[{"expression":"*","version":5}],"empty":[]}`, writeGroup(false))
	require.Equal(t, "{\n"+
		"\t\"attributes\":{},\n"+
		"\t\"groupRetryPolicy\":{\n"+
		"\t\t\"customizedRetryPolicy\":{\n"+
		"\t\t\t\"next\":[1000,5000]\n"+
		"\t\t},\n"+
		"\t\t\"type\":\"CUSTOMIZED\"\n"+
		"\t},\n"+
		"\t\"notify\":true,\n"+
		"\t\"subscriptionDataSet\":[{\n"+
		"\t\t\"expression\":\"*\",\n"+
		"\t\t\"version\":5\n"+
		"\t}],\n"+
		"\t\"empty\":[]\n"+
		"}", writeGroup(true))
}

func TestWriter_Misuse_Panics(t *testing.T) {
	for name, f := range map[string]func(w *Writer){
		"end with nothing open": func(w *Writer) { w.End() },
		"value without key":     func(w *Writer) { w.BeginObject(); w.Int(1) },
		"int key in object":     func(w *Writer) { w.BeginObject(); w.IntKey(1) },
		"string key in int map": func(w *Writer) { w.BeginIntMap(); w.Key("a") },
		"two keys":              func(w *Writer) { w.BeginObject(); w.Key("a"); w.Key("b") },
		"end after key":         func(w *Writer) { w.BeginObject(); w.Key("a"); w.End() },
	} {
		require.Panics(t, func() { f(NewWriter(nil, false)) }, name)
	}
}

func TestAppendString_EscapesAsFastjson(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{"b\"é<\u2028\t", `"b\"é<\u2028\t"`}, // fastjson 1.2.83's output
		{"\x01\x7f😀/", `"\u0001\u007F😀/"`},   // fastjson 1.2.83's output
		{"\b\f\n\r\\\x0b\u0085\u2029", `"\b\f\n\r\\\u000B\u0085\u2029"`},
		{"a\xffb", "\"a\uFFFDb\""},
	} {
		require.Equal(t, tc.want, string(AppendString(nil, tc.in)), "%q", tc.in)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("b\"é<\u2028\t\x01\x7f😀/\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q -> %q is not a JSON string: %v", s, out, err)
		}
		if want := string([]rune(s)); back != want {
			t.Fatalf("%q -> %q -> %q, want %q", s, out, back, want)
		}
	})
}
