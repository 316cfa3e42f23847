package fastjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuoteObjectKeys(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain JSON is left alone", `{"a":{"b":[1,{"c":2}]}}`, `{"a":{"b":[1,{"c":2}]}}`},
		{"one object key", `{"t":{{"queueId":0,"topic":"T"}:12}}`, `{"t":{"{\"queueId\":0,\"topic\":\"T\"}":12}}`},
		{"two keys and object values", `{{"q":1}:{"min":0},{"q":2}:{"min":1}}`, `{"{\"q\":1}":{"min":0},"{\"q\":2}":{"min":1}}`},
		{"braces in strings", `{"x":"{","m":{{"topic":"a}:"}:1}}`, `{"x":"{","m":{"{\"topic\":\"a}:\"}":1}}`},
		{"objects in arrays are values", `[{"a":1},{"b":2}]`, `[{"a":1},{"b":2}]`},
		{"unclosed key", `{{"a":1`, `{{"a":1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, string(QuoteObjectKeys([]byte(tc.in))))
		})
	}
}

func FuzzQuoteObjectKeys(f *testing.F) {
	for _, s := range []string{
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":1}}}`,
		`{"a":[{"b":"\"{"}]}`, `{{`, `{,{}:1}`, `[{},{}:]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := QuoteObjectKeys(b)
		if json.Valid(b) && string(out) != string(b) {
			t.Fatalf("valid JSON rewritten: %q -> %q", b, out)
		}
	})
}
