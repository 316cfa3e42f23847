package message

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTagsCode_KnownJavaValues(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		want int64
	}{
		{"", 0},
		{"a", 97},
		// 'T'=84, 'a'=97, 'g'=103, 'A'=65: ((84*31+97)*31+103)*31+65.
		{"TagA", 2598919},
		{"TagB", 2598920},
		// U+6807 U+7B7E: 0x6807*31 + 0x7B7E.
		{"标签", 857175},
		// U+1F600 is the surrogate pair D83D DE00: 0xD83D*31 + 0xDE00.
		{"😀", 1772899},
		{"x🚀y", 58538878},
		// Negative: int32 wrap, sign-extended.
		{"tag1||tag2", -1518192145},
		// Lone continuation byte and truncated sequences: one U+FFFD each.
		{"\x80", 0xFFFD},
		{"\xE6\xA0", 0xFFFD},
		{"\xE6\x00", 0xFFFD*31 + 0},
		// An encoded surrogate is one U+FFFD in Java.
		{"\xED\xA0\x80", 0xFFFD},
	} {
		require.Equal(t, tc.want, TagsCode(tc.tag), "TagsCode(%q)", tc.tag)
		require.Equal(t, tc.want, TagsCode([]byte(tc.tag)), "TagsCode([]byte(%q))", tc.tag)
	}
}

// TestTagsCode_MatchesJDK checks TagsCode against new String(bytes,
// UTF_8).hashCode() computed by OpenJDK 17 (testdata/TagsCodeVectors.java)
// for valid tags and for thousands of malformed byte strings.
func TestTagsCode_MatchesJDK(t *testing.T) {
	f, err := os.Open("testdata/tagscode_jdk17.txt")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		hexTag, code, ok := strings.Cut(sc.Text(), "\t")
		require.True(t, ok, "line %q", sc.Text())
		tag, err := hex.DecodeString(hexTag)
		require.NoError(t, err)
		want, err := strconv.ParseInt(code, 10, 64)
		require.NoError(t, err)
		require.Equal(t, want, TagsCode(tag), "tag bytes %s", hexTag)
		require.Equal(t, want, TagsCode(string(tag)), "tag bytes %s", hexTag)
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 3000)
}

func TestTagsCode_DoesNotAllocate(t *testing.T) {
	tag := []byte("标签-😀-TagA")
	allocs := testing.AllocsPerRun(100, func() {
		_ = TagsCode(tag)
		_ = TagsCode("TagA")
	})
	require.Zero(t, allocs)
}

// HashCode continues a hash across a split at a character boundary, and
// its four-at-a-time ASCII loop gives Java's value at every length and
// alignment, also when ASCII and other characters mix.
func TestHashCode_Continues(t *testing.T) {
	for _, parts := range [][2]string{
		{"", ""}, {"abc", "def"}, {"TopicTest#", "键🚀"}, {"ü", "𝄞𝄞"}, {"BenchTopic#", "order-4294967297"},
		{"a", "\xe6\xa0b"}, {"0A00000104D21B6D", "35865F45A67B0000"},
	} {
		got := HashCode(HashCode(0, parts[0]), parts[1])
		require.Equal(t, int32(TagsCode(parts[0]+parts[1])), got, "%q + %q", parts[0], parts[1])
	}
	s := "TopicTest#订单-001 order-42 ÿ🚀 " + strings.Repeat("x", 40)
	for i := range len(s) {
		if !utf8.RuneStart(s[i]) {
			continue
		}
		var h int32 // h = 31*h + c, one code unit at a time
		for _, c := range utf16.Encode([]rune(s[i:])) {
			h = 31*h + int32(c)
		}
		require.Equal(t, h, HashCode(0, s[i:]), "%q", s[i:])
	}
}

func BenchmarkHashCode(b *testing.B) {
	key := "BenchTopic#0A00000104D21B6D35865F45A67B0000"
	b.SetBytes(int64(len(key)))
	for b.Loop() {
		HashCode(0, key)
	}
}
