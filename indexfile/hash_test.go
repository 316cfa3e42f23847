package indexfile

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

func TestKeyHash_HandComputed(t *testing.T) {
	// Java "TopicTest#key1".hashCode(), h = 31*h + c, wrapping at 32 bits:
	//   T 84, o 2715, p 84277, i 2612692, c 80993551, T 2510800165,
	//   e 525393888, s 3402308755, t 2392356417 (= -1902610879 as int32),
	//   # 1148604930, k 1247014569, e 2746076, y 85128477,
	//   1 2638982836 = -1655984460 as int32, so |h| = 1655984460.
	require.Equal(t, int32(1655984460), KeyHash("TopicTest", "key1"))
	// "...key2" differs only in the last code unit: one more.
	require.Equal(t, int32(1655984459), KeyHash("TopicTest", "key2"))
	// Java "T#jllgvmc".hashCode() is Integer.MIN_VALUE, whose Math.abs
	// stays negative; indexKeyHashMethod makes it 0.
	require.Equal(t, int32(math.MinInt32), int32(message.TagsCode("T#jllgvmc")))
	require.Equal(t, int32(0), KeyHash("T", "jllgvmc"))
}

func TestKeyHash_EqualsTagsCodeOfJoinedKey(t *testing.T) {
	for _, tc := range []struct{ name, topic, key string }{
		{"ascii", "TopicTest", "order-42"},
		{"empty key", "TopicTest", ""},
		{"empty topic", "", "k"},
		{"chinese", "TopicTest", "订单-001"},
		{"supplementary plane", "TopicTest", "rocket🚀x𝄞"},
		{"non-ascii topic", "主题", "键"},
		{"truncated sequence", "TopicTest", "a\xe6\xa0b"},
		{"truncated at end", "TopicTest", "a\xf0\x9f\x9a"},
		{"encoded surrogate", "TopicTest", "\xed\xa0\x80z"},
		{"lone continuation", "TopicTest", "\x80\xbf"},
		{"invalid and long", "TopicTest", strings.Repeat("é\xff", 300)},
		{"invalid topic", "T\xc3", "k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := positive(int32(message.TagsCode(tc.topic + "#" + tc.key)))
			require.Equal(t, want, KeyHash(tc.topic, tc.key))
		})
	}
}

func TestPositive(t *testing.T) {
	for in, want := range map[int32]int32{0: 0, 5: 5, -5: 5, math.MaxInt32: math.MaxInt32,
		-math.MaxInt32: math.MaxInt32, math.MinInt32: 0} {
		require.Equal(t, want, positive(in), "positive(%d)", in)
	}
}

func TestKeyHash_DoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		KeyHash("TopicTest", "订单-001")
		KeyHash("TopicTest", "a\xe6\xa0b")
	})
	require.Zero(t, allocs)
}
