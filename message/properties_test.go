package message

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeProperties_SortedAndSkipsUnreadable(t *testing.T) {
	got := EncodeProperties(map[string]string{
		"TAGS":       "TagA",
		"KEYS":       "k1 k2",
		"":           "no name",
		"EMPTY":      "",
		"BAD\x01":    "name holds a separator",
		"BAD\x02":    "name holds a separator",
		"VALUE_SEP":  "a\x02b",
		"VALUE_KV":   "a\x01b", // reads back: the value keeps later 0x01 bytes
		"UNIQ_KEY":   "ID",
		"WAIT":       "false",
		"__CRC32#":   "0123456789",
		"RETRY_TOPI": "x",
	})
	require.Equal(t,
		"KEYS\x01k1 k2\x02RETRY_TOPI\x01x\x02TAGS\x01TagA\x02UNIQ_KEY\x01ID\x02VALUE_KV\x01a\x01b\x02WAIT\x01false\x02__CRC32#\x010123456789\x02",
		got)
	require.Equal(t, "", EncodeProperties(nil))
}

func TestParseProperties_LikeString2MessageProperties(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"one", "a\x01b\x02", map[string]string{"a": "b"}},
		{"no trailing separator", "a\x01b", map[string]string{"a": "b"}},
		{"two", "KEYS\x01k1 k2\x02TAGS\x01TagA\x02", map[string]string{"KEYS": "k1 k2", "TAGS": "TagA"}},
		{"empty name dropped", "\x01b\x02c\x01d\x02", map[string]string{"c": "d"}},
		{"empty value dropped", "a\x01\x02c\x01d\x02", map[string]string{"c": "d"}},
		{"no name/value separator dropped", "abc\x02c\x01d\x02", map[string]string{"c": "d"}},
		{"separator only in the next piece", "ab\x02\x01cd\x02", map[string]string{}},
		{"value keeps later 0x01", "a\x01b\x01c\x02", map[string]string{"a": "b\x01c"}},
		{"empty pieces skipped", "\x02\x02a\x01b\x02\x02", map[string]string{"a": "b"}},
		{"later duplicate wins", "a\x01first\x02a\x01second\x02", map[string]string{"a": "second"}},
		{"short piece dropped", "a\x01\x02", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ParseProperties(tc.in))
			for k, v := range tc.want {
				got, ok := LookupProperty(tc.in, k)
				require.True(t, ok, k)
				require.Equal(t, v, got)
				gotB, ok := LookupProperty([]byte(tc.in), k)
				require.True(t, ok, k)
				require.Equal(t, v, string(gotB))
			}
		})
	}
}

func TestProperties_RoundTrip(t *testing.T) {
	p := map[string]string{"KEYS": "a b", "TAGS": "标签", "UNIQ_KEY": "X", "x": "1\x012"}
	require.Equal(t, p, ParseProperties(EncodeProperties(p)))

	var b []byte
	b = AppendProperty(b, "KEYS", "a b")
	b = AppendProperty(b, "TAGS", "标签")
	require.Equal(t, "KEYS\x01a b\x02TAGS\x01标签\x02", string(b))
	require.Equal(t, map[string]string{"KEYS": "a b", "TAGS": "标签"}, ParseProperties(string(b)))
}

func TestLookupProperty_MissingAndPrefixNames(t *testing.T) {
	props := "TAGSX\x01no\x02XTAGS\x01no\x02TAG\x01no\x02TAGS\x01yes\x02"
	v, ok := LookupProperty(props, "TAGS")
	require.True(t, ok)
	require.Equal(t, "yes", v)
	_, ok = LookupProperty(props, "KEYS")
	require.False(t, ok)
	_, ok = LookupProperty("", "KEYS")
	require.False(t, ok)
	_, ok = LookupProperty("no", "no") // not name/value
	require.False(t, ok)
}

func TestLookupProperties_AgreesWithLookupProperty(t *testing.T) {
	names := []string{"TAGS", "KEYS", "UNIQ_KEY", "DELAY"}
	for _, props := range []string{
		"",
		"TAGSX\x01no\x02XTAGS\x01no\x02TAG\x01no\x02TAGS\x01yes\x02",
		"KEYS\x01a b\x02TAGS\x01t1\x02KEYS\x01c\x02UNIQ_KEY\x01U\x02",
		"no\x02\x01x\x02DELAY\x01\x02DELAY\x013",
	} {
		vals := make([]string, len(names))
		found := LookupProperties(props, names, vals)
		for i, name := range names {
			want, ok := LookupProperty(props, name)
			require.Equal(t, ok, found&(1<<i) != 0, "%q in %q", name, props)
			require.Equal(t, want, vals[i], "%q in %q", name, props)
		}
	}
	b := []byte("TAGS\x01t\x02KEYS\x01k\x02")
	vals := make([][]byte, 4)
	allocs := testing.AllocsPerRun(100, func() { LookupProperties(b, names, vals) })
	require.Zero(t, allocs)
	require.Equal(t, "k", string(vals[1]))
}

func TestLookupProperty_DoesNotAllocate(t *testing.T) {
	props := []byte(EncodeProperties(map[string]string{"KEYS": "a b", "TAGS": "TagA", "UNIQ_KEY": "X"}))
	s := string(props)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := LookupProperty(props, PropertyTags); !ok {
			t.Fatal("TAGS not found")
		}
		if _, ok := LookupProperty(s, PropertyUniqClientMessageIDKeyIndex); !ok {
			t.Fatal("UNIQ_KEY not found")
		}
	})
	require.Zero(t, allocs)
}

func TestKeys_SplitsOnSpaces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ", nil},
		{"k1", []string{"k1"}},
		{"k1 k2", []string{"k1", "k2"}},
		{"  k1   k2 ", []string{"k1", "k2"}},
		{"k1\tk2", []string{"k1\tk2"}}, // only ' ' separates keys
	} {
		require.Equal(t, tc.want, slices.Collect(Keys(tc.in)), "%q", tc.in)
		var gotB []string
		for k := range Keys([]byte(tc.in)) {
			gotB = append(gotB, string(k))
		}
		require.Equal(t, tc.want, gotB, "%q", tc.in)
	}
}

func TestKeys_StopsEarlyAndDoesNotAllocate(t *testing.T) {
	keys := []byte("a bb ccc dddd")
	var first []byte
	for k := range Keys(keys) {
		first = k
		break
	}
	require.Equal(t, "a", string(first))

	allocs := testing.AllocsPerRun(100, func() {
		n := 0
		for k := range Keys(keys) {
			n += len(k)
		}
		if n != 10 {
			t.Fatal(n)
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkLookupProperties(b *testing.B) {
	props := []byte("TAGS\x01TagA\x02KEYS\x01order-123456789\x02UNIQ_KEY\x017F0000010F2A18B4AAC2712B4A8B0000\x02WAIT\x01true\x02")
	names := []string{PropertyTags, PropertyKeys, PropertyUniqClientMessageIDKeyIndex, PropertyDelayTimeLevel}
	vals := make([][]byte, len(names))
	b.SetBytes(int64(len(props)))
	for b.Loop() {
		LookupProperties(props, names, vals)
	}
}
