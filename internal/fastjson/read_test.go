package fastjson

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuoteIntKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{0:"a",1:"b"}`, `{"0":"a","1":"b"}`},
		{`{ -12 :"a", 3:{4:[5,6]}}`, `{ "-12" :"a", "3":{"4":[5,6]}}`},
		{`[1,2,{7:8}]`, `[1,2,{"7":8}]`},
		{`{"k":"{0:1,2:3}"}`, `{"k":"{0:1,2:3}"}`},
		{`{"k\"{0:":1}`, `{"k\"{0:":1}`},
		{`{"a":1,"b":2}`, `{"a":1,"b":2}`},
		{"{\n\t\"t@g\":{0:1,1:2\n\t}\n}", "{\n\t\"t@g\":{\"0\":1,\"1\":2\n\t}\n}"},
		{`{1.5:2}`, `{1.5:2}`}, // not an integer key: left alone (and invalid)
	} {
		require.Equal(t, tc.want, string(QuoteIntKeys([]byte(tc.in))), tc.in)
	}
}

func TestQuoteIntKeys_NothingToDo_ReturnsInput(t *testing.T) {
	in := []byte(`{"a":[1,2]}`)
	out := QuoteIntKeys(in)
	require.Equal(t, &in[0], &out[0])
}

func TestUnmarshal_BareAndQuotedKeys(t *testing.T) {
	for _, in := range []string{
		`{"offsetTable":{"T@g":{0:5,1:7}}}`,
		`{"offsetTable":{"T@g":{"0":5,"1":7}}}`,
		"{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:5,1:7\n\t\t}\n\t}\n}",
	} {
		var v struct {
			OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
		}
		require.NoError(t, Unmarshal([]byte(in), &v), in)
		require.Equal(t, map[string]map[int32]int64{"T@g": {0: 5, 1: 7}}, v.OffsetTable, in)
	}
	var v map[string]any
	require.Error(t, Unmarshal([]byte(`{0:`), &v))
}

// FuzzQuoteIntKeys: valid JSON has no bare keys, so it comes back as is;
// anything else must not panic.
func FuzzQuoteIntKeys(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{"TopicTest@cg":{0:123,1:456}}}`))
	f.Add([]byte(`{0:"a",-1:{2:[3,{4:5}]},"s":"{6:7}"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := QuoteIntKeys(b)
		if json.Valid(b) && !bytes.Equal(out, b) {
			t.Fatalf("valid JSON changed: %q -> %q", b, out)
		}
	})
}

// FuzzUnmarshal reads arbitrary bytes as a consumerOffset.json and as a
// generic value: never a panic, and whatever reads as an offset table
// writes back (bare keys, pretty) to text that reads as the same table.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{"TopicTest@cg":{0:123,1:456}}}`))
	f.Add([]byte("{\n\t\"offsetTable\":{\n\t\t\"%RETRY%cg@cg\":{0:0\n\t\t},\n\t\t\"T@cg\":{0:1,-3:2\n\t\t}\n\t}\n}"))
	f.Add([]byte(`{"offsetTable":{"T@g":{"0":5}},"dataVersion":{"counter":1}}`))
	f.Add([]byte(`{"a":"{0:1}","b":[1,{2:3}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var anyV any
		_ = Unmarshal(b, &anyV)
		var v struct {
			OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
		}
		if Unmarshal(b, &v) != nil {
			return
		}
		for _, pretty := range []bool{false, true} {
			w := NewWriter(nil, pretty)
			w.BeginObject()
			w.Key("offsetTable")
			w.BeginObject()
			for _, k := range sortedKeys(v.OffsetTable) {
				w.Key(k)
				w.BeginIntMap()
				for _, q := range sortedKeys(v.OffsetTable[k]) {
					w.IntKey(int64(q))
					w.Int(v.OffsetTable[k][q])
				}
				w.End()
			}
			w.End()
			w.End()
			var back struct {
				OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
			}
			if err := Unmarshal(w.Bytes(), &back); err != nil {
				t.Fatalf("our output %q does not read: %v", w.Bytes(), err)
			}
			if len(back.OffsetTable) != len(v.OffsetTable) {
				t.Fatalf("round trip lost keys: %v -> %v", v.OffsetTable, back.OffsetTable)
			}
			for k, m := range v.OffsetTable {
				if len(m) != len(back.OffsetTable[k]) {
					t.Fatalf("round trip of %q: %v -> %v", k, m, back.OffsetTable[k])
				}
				for q, off := range m {
					if back.OffsetTable[k][q] != off {
						t.Fatalf("round trip of %q queue %d: %d -> %d", k, q, off, back.OffsetTable[k][q])
					}
				}
			}
		}
	})
}
