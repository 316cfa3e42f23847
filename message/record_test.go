package message

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// patch returns a copy of b with f applied.
func patch(b []byte, f func(b []byte)) []byte {
	c := bytes.Clone(b)
	f(c)
	return c
}

func TestParse_Errors(t *testing.T) {
	m := sampleMessage()
	good := mustEncode(t, m)
	n := len(good)
	bodyLenPos := 84
	topicLenPos := 88 + len(m.Body)
	propsLenPos := topicLenPos + 1 + len(m.Topic)
	put32 := func(p int, v int32) func([]byte) {
		return func(b []byte) { binary.BigEndian.PutUint32(b[p:], uint32(v)) }
	}
	put16 := func(p int, v int16) func([]byte) {
		return func(b []byte) { binary.BigEndian.PutUint16(b[p:], uint16(v)) }
	}

	blank := make([]byte, 64)
	binary.BigEndian.PutUint32(blank, 64)
	blankMagic := MagicBlank
	binary.BigEndian.PutUint32(blank[4:], uint32(blankMagic))

	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.ErrUnexpectedEOF},
		{"header cut", good[:7], io.ErrUnexpectedEOF},
		{"body cut", good[:bodyLenPos+6], io.ErrUnexpectedEOF},
		{"last byte missing", good[:n-1], io.ErrUnexpectedEOF},
		{"blank", blank, ErrBlank},
		{"blank header only", blank[:8], ErrBlank},
		{"bad magic", patch(good, put32(4, 0x12345678)), ErrCorrupt},
		{"zero magic", make([]byte, 200), ErrCorrupt},
		{"negative TOTALSIZE", patch(good, put32(0, -1)), ErrCorrupt},
		{"TOTALSIZE below minimum", patch(good, put32(0, MinRecordSize-1)), ErrCorrupt},
		{"TOTALSIZE larger than the fields", append(patch(good, put32(0, int32(n+1))), 0), ErrCorrupt},
		{"TOTALSIZE smaller than the fields", patch(good, put32(0, int32(n-1))), ErrCorrupt},
		{"body length negative", patch(good, put32(bodyLenPos, -1)), ErrCorrupt},
		{"body length overruns", patch(good, put32(bodyLenPos, int32(n))), ErrCorrupt},
		{"body length one too long", patch(good, put32(bodyLenPos, int32(len(m.Body)+1))), ErrCorrupt},
		{"body length one too short", patch(good, put32(bodyLenPos, int32(len(m.Body)-1))), ErrCorrupt},
		{"topic length overruns", patch(good, func(b []byte) { b[topicLenPos] = 127 }), ErrCorrupt},
		{"v1 topic length is signed", v1WithLongTopic(t), ErrCorrupt},
		{"topic length one too short", patch(good, func(b []byte) { b[topicLenPos]-- }), ErrCorrupt},
		{"properties length negative", patch(good, put16(propsLenPos, -1)), ErrCorrupt},
		{"properties length one too long", patch(good, put16(propsLenPos, int16(len(m.Properties)+1))), ErrCorrupt},
		{"properties length one too short", patch(good, put16(propsLenPos, int16(len(m.Properties)-1))), ErrCorrupt},
		{"born port out of range", patch(good, put32(52, 65536)), ErrCorrupt},
		{"store port negative", patch(good, put32(68, -1)), ErrCorrupt},
		{"IPv6 flags on a minimal record", patch(mustEncode(t, &Message{}), put32(36, FlagBornHostV6|FlagStoreHostV6)), ErrCorrupt},
		{"IPv6 flag on an IPv4 record", patch(good, put32(36, FlagBornHostV6)), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.in)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, r)
			_, n, err := Decode(tc.in)
			require.ErrorIs(t, err, tc.want)
			require.Zero(t, n)
		})
	}
}

func TestParse_EveryTruncationIsUnexpectedEOF(t *testing.T) {
	v1 := sampleMessage()
	v2 := sampleMessage()
	v2.Topic = strings.Repeat("T", 300)
	v2.BornHost = netip.MustParseAddrPort("[2001:db8::7]:1")
	v2.StoreHost = netip.MustParseAddrPort("[2001:db8::8]:2")
	for _, m := range []*Message{v1, v2, {}} {
		b := mustEncode(t, m)
		for i := range len(b) {
			_, err := Parse(b[:i])
			require.ErrorIs(t, err, io.ErrUnexpectedEOF, "prefix of %d of %d bytes", i, len(b))
		}
		r, err := Parse(append(bytes.Clone(b), "next record"...))
		require.NoError(t, err)
		require.Equal(t, b, []byte(r))
	}
}

func TestParse_DoesNotAllocate(t *testing.T) {
	b := mustEncode(t, sampleMessage())
	allocs := testing.AllocsPerRun(100, func() {
		r, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Topic()
		_ = r.Body()
		_ = r.StoreHost()
		if err := r.CheckCRC(); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestRecord_AccessorsReadEveryField(t *testing.T) {
	for _, ipv6 := range []bool{false, true} {
		m := sampleMessage()
		if ipv6 {
			m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1234")
			m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:10911")
			m.Topic = strings.Repeat("L", 200)
		}
		b := mustEncode(t, m)
		r, err := Parse(b)
		require.NoError(t, err)
		require.Equal(t, int32(len(b)), r.TotalSize())
		if ipv6 {
			require.Equal(t, MagicV2, r.Magic())
			require.Equal(t, m.SysFlag|FlagBornHostV6|FlagStoreHostV6, r.SysFlag())
		} else {
			require.Equal(t, MagicV1, r.Magic())
			require.Equal(t, m.SysFlag, r.SysFlag())
		}
		require.Equal(t, m.BodyCRC, r.BodyCRC())
		require.Equal(t, m.QueueID, r.QueueID())
		require.Equal(t, m.Flag, r.Flag())
		require.Equal(t, m.QueueOffset, r.QueueOffset())
		require.Equal(t, m.PhysicalOffset, r.PhysicalOffset())
		require.Equal(t, m.BornTimestamp, r.BornTimestamp())
		require.Equal(t, m.BornHost, r.BornHost())
		require.Equal(t, m.StoreTimestamp, r.StoreTimestamp())
		require.Equal(t, m.StoreHost, r.StoreHost())
		require.Equal(t, m.ReconsumeTimes, r.ReconsumeTimes())
		require.Equal(t, m.PreparedTransactionOffset, r.PreparedTransactionOffset())
		require.Equal(t, m.Body, r.Body())
		require.Equal(t, m.Topic, string(r.Topic()))
		require.Equal(t, m.Properties, string(r.Properties()))
		require.NoError(t, r.CheckCRC())
	}
}

func TestRecord_SettersPatchInPlace(t *testing.T) {
	for _, born := range []string{"1.2.3.4:5", "[2001:db8::1]:5"} {
		m := sampleMessage()
		m.BornHost = netip.MustParseAddrPort(born)
		b := mustEncode(t, m)
		r, err := Parse(b)
		require.NoError(t, err)
		r.SetQueueOffset(-7)
		r.SetPhysicalOffset(123456789)
		r.SetStoreTimestamp(99)

		got, _, err := Decode(b) // the patches are in b itself
		require.NoError(t, err)
		m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp = -7, 123456789, 99
		require.Equal(t, mustEncode(t, m), b)
		require.Equal(t, m.StoreHost, got.StoreHost, "store host untouched")
	}
}

func TestRecord_CheckCRC(t *testing.T) {
	b := mustEncode(t, sampleMessage())
	b[90] ^= 0x01 // a body byte
	r, err := Parse(b)
	require.NoError(t, err, "Parse does not check the CRC")
	err = r.CheckCRC()
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "BODYCRC is")
	_, _, err = Decode(b)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestRecord_MessageCopiesBytes(t *testing.T) {
	b := mustEncode(t, sampleMessage())
	r, err := Parse(b)
	require.NoError(t, err)
	m := r.Message()
	clear(b)
	require.Equal(t, sampleMessage(), m)
}

func TestRecord_SlicesDoNotGrowIntoNextField(t *testing.T) {
	b := mustEncode(t, sampleMessage())
	r, err := Parse(b)
	require.NoError(t, err)
	body := r.Body()
	_ = append(body, 'X') // must reallocate, not overwrite the topic length
	_, err = Parse(b)
	require.NoError(t, err)
}

func TestBodyCRC_MatchesJavaUtilAll(t *testing.T) {
	// java.util.zip.CRC32 of "hello" is 0x3610A686; & 0x7FFFFFFF clears
	// nothing. Of "123456789" it is 0xCBF43926, whose top bit is cleared.
	require.Equal(t, uint32(0x3610A686), BodyCRC([]byte("hello")))
	require.Equal(t, uint32(0x4BF43926), BodyCRC([]byte("123456789")))
	require.Equal(t, uint32(0), BodyCRC(nil))
}

func TestPeekHeader(t *testing.T) {
	b := mustEncode(t, sampleMessage())
	size, magic, ok := PeekHeader(b)
	require.True(t, ok)
	require.Equal(t, int32(len(b)), size)
	require.Equal(t, MagicV1, magic)
	_, _, ok = PeekHeader(b[:7])
	require.False(t, ok)
}

// v1WithLongTopic returns a MagicV1 record whose 1-byte topic length is 200:
// consistent if read unsigned, but RocketMQ reads it as a signed byte.
func v1WithLongTopic(t *testing.T) []byte {
	m := sampleMessage()
	m.Topic = strings.Repeat("T", 200)
	v2 := mustEncode(t, m)
	topicLenPos := 88 + len(m.Body)
	v1 := append([]byte(nil), v2[:topicLenPos]...)
	v1 = append(v1, 200)
	v1 = append(v1, v2[topicLenPos+2:]...)
	binary.BigEndian.PutUint32(v1, uint32(len(v1)))
	magic := MagicV1
	binary.BigEndian.PutUint32(v1[4:], uint32(magic))
	return v1
}
