package message

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sampleMessage returns a message with every field set to a distinct value.
func sampleMessage() *Message {
	body := []byte("hello, rocketmq")
	return &Message{
		Topic:                     "TopicTest",
		QueueID:                   3,
		Flag:                      0x55,
		Body:                      body,
		Properties:                "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01C0A8000100002A9F0000000000000400\x02",
		SysFlag:                   FlagMultiTags,
		BornTimestamp:             1_700_000_000_123,
		BornHost:                  netip.MustParseAddrPort("10.1.2.3:54321"),
		StoreTimestamp:            1_700_000_000_456,
		StoreHost:                 netip.MustParseAddrPort("192.168.0.1:10911"),
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 777,
		QueueOffset:               42,
		PhysicalOffset:            1 << 33,
		BodyCRC:                   BodyCRC(body),
	}
}

func mustEncode(t testing.TB, m *Message) []byte {
	t.Helper()
	b, err := AppendEncode(nil, m)
	require.NoError(t, err)
	return b
}

func TestEncode_LayoutMatchesSpec(t *testing.T) {
	m := sampleMessage()
	b := mustEncode(t, m)
	wantSize := 91 + len(m.Body) + len(m.Topic) + len(m.Properties)
	require.Len(t, b, wantSize)

	u32 := func(p int) uint32 { return be.Uint32(b[p:]) }
	u64 := func(p int) uint64 { return be.Uint64(b[p:]) }
	require.Equal(t, uint32(wantSize), u32(0), "TOTALSIZE")
	require.Equal(t, []byte{0xDA, 0xA3, 0x20, 0xA7}, b[4:8], "MAGICCODE v1")
	require.Equal(t, m.BodyCRC, u32(8), "BODYCRC")
	require.Equal(t, uint32(3), u32(12), "QUEUEID")
	require.Equal(t, uint32(0x55), u32(16), "FLAG")
	require.Equal(t, uint64(42), u64(20), "QUEUEOFFSET")
	require.Equal(t, uint64(1<<33), u64(28), "PHYSICALOFFSET")
	require.Equal(t, uint32(FlagMultiTags), u32(36), "SYSFLAG")
	require.Equal(t, uint64(1_700_000_000_123), u64(40), "BORNTIMESTAMP")
	require.Equal(t, []byte{10, 1, 2, 3, 0, 0, 0xD4, 0x31}, b[48:56], "BORNHOST")
	require.Equal(t, uint64(1_700_000_000_456), u64(56), "STORETIMESTAMP")
	require.Equal(t, []byte{192, 168, 0, 1, 0, 0, 0x2A, 0x9F}, b[64:72], "STOREHOST")
	require.Equal(t, uint32(2), u32(72), "RECONSUMETIMES")
	require.Equal(t, uint64(777), u64(76), "PREPARED TX OFFSET")
	require.Equal(t, uint32(len(m.Body)), u32(84), "BODY length")
	p := 88
	require.Equal(t, m.Body, b[p:p+len(m.Body)])
	p += len(m.Body)
	require.Equal(t, byte(len(m.Topic)), b[p], "TOPIC length")
	require.Equal(t, m.Topic, string(b[p+1:p+1+len(m.Topic)]))
	p += 1 + len(m.Topic)
	require.Equal(t, uint16(len(m.Properties)), be.Uint16(b[p:]), "PROPERTIES length")
	require.Equal(t, m.Properties, string(b[p+2:]))
}

func TestEncode_LongTopicUsesMagicV2(t *testing.T) {
	m := sampleMessage()
	m.Topic = strings.Repeat("t", MaxTopicLenV1)
	b := mustEncode(t, m)
	require.Equal(t, MagicV1, int32(be.Uint32(b[4:])))

	m.Topic += "t"
	b = mustEncode(t, m)
	require.Equal(t, []byte{0xDA, 0xA3, 0x20, 0xAB}, b[4:8], "MAGICCODE v2")
	require.Len(t, b, 92+len(m.Body)+len(m.Topic)+len(m.Properties))
	p := 88 + len(m.Body)
	require.Equal(t, uint16(128), be.Uint16(b[p:]), "2-byte TOPIC length")
}

func TestEncode_IPv6HostsSetSysFlag(t *testing.T) {
	m := sampleMessage()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1234")
	m.StoreHost = netip.MustParseAddrPort("[fe80::2%eth0]:10911") // the zone is dropped
	b := mustEncode(t, m)
	require.Len(t, b, 91+24+len(m.Body)+len(m.Topic)+len(m.Properties))
	require.Equal(t, FlagMultiTags|FlagBornHostV6|FlagStoreHostV6, int32(be.Uint32(b[36:])))
	require.Equal(t, m.BornHost.Addr().AsSlice(), b[48:64])
	require.Equal(t, uint32(1234), be.Uint32(b[64:]))
	require.Equal(t, uint64(m.StoreTimestamp), be.Uint64(b[68:]), "STORETIMESTAMP moved by 12")
	require.Equal(t, uint32(10911), be.Uint32(b[76+16:]))
	require.Equal(t, FlagMultiTags, m.SysFlag, "Encode must not modify m")
}

func TestEncode_ClearsStaleIPv6FlagsAndUnmapsIPv4(t *testing.T) {
	m := sampleMessage()
	m.SysFlag = FlagBornHostV6 | FlagStoreHostV6 | TxCommit
	m.BornHost = netip.MustParseAddrPort("[::ffff:10.0.0.9]:80")
	m.StoreHost = netip.AddrPort{} // zero: 0.0.0.0:0
	b := mustEncode(t, m)
	require.Len(t, b, 91+len(m.Body)+len(m.Topic)+len(m.Properties))
	require.Equal(t, TxCommit, int32(be.Uint32(b[36:])))
	require.Equal(t, []byte{10, 0, 0, 9, 0, 0, 0, 80}, b[48:56])
	require.Equal(t, make([]byte, 8), b[64:72])
}

// A process killed while encoding into a mapped file must leave TOTALSIZE
// and MAGICCODE zero, so that recovery does not take the torn record for a
// whole one: encode writes them last. Here the record's last bytes (in its
// properties) fall into a read-only page, so the encode faults there, as a
// kill could stop it.
func TestEncode_WritesTheSizeLast(t *testing.T) {
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	require.NoError(t, unix.Mprotect(mem[page:], unix.PROT_READ))
	m := sampleMessage()
	size, err := EncodedSize(m)
	require.NoError(t, err)
	start := page - size + 10 // the last 10 bytes cannot be written
	faulted := func() (faulted bool) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { faulted = recover() != nil }()
		Encode(mem[start:start+size], m)
		return false
	}()
	require.True(t, faulted)
	want := mustEncode(t, m)
	propsAt := size - len(m.Properties)
	require.Equal(t, want[8:propsAt], mem[start+8:start+propsAt], "all but the properties' end was written")
	require.Equal(t, make([]byte, 8), mem[start:start+8], "TOTALSIZE and MAGICCODE are written last")
}

// A NUL byte in the properties is what a torn record shows, so no put
// writes one; CheckWhole finds it, and a bad topic character, in a record.
func TestCheckWhole(t *testing.T) {
	m := sampleMessage()
	rec := Record(mustEncode(t, m))
	require.NoError(t, rec.CheckWhole())

	m.Properties = "KEYS\x01a\x00b\x02"
	_, err := EncodedSize(m)
	require.ErrorIs(t, err, ErrBadProperties)

	torn := bytes.Clone(rec)
	clear(torn[len(torn)-4:]) // the end of the properties never written
	require.ErrorIs(t, Record(torn).CheckWhole(), ErrCorrupt)
	require.NoError(t, Record(torn).CheckCRC(), "the body CRC does not see it")

	bad := bytes.Clone(rec)
	bad[bytes.Index(bad, []byte("TopicTest"))] = 0
	require.ErrorIs(t, Record(bad).CheckWhole(), ErrCorrupt)
}

func TestEncodedSize_Limits(t *testing.T) {
	empty := &Message{}
	n, err := EncodedSize(empty)
	require.NoError(t, err)
	require.Equal(t, MinRecordSize, n)

	for _, tc := range []struct {
		name string
		edit func(m *Message)
		want error // nil: valid
	}{
		{"properties at the limit", func(m *Message) { m.Properties = strings.Repeat("p", MaxPropertiesLen) }, nil},
		{"properties over the limit", func(m *Message) { m.Properties = strings.Repeat("p", MaxPropertiesLen+1) }, ErrTooLarge},
		{"topic at the limit", func(m *Message) { m.Topic = strings.Repeat("t", MaxTopicLen) }, nil},
		{"topic over the limit", func(m *Message) { m.Topic = strings.Repeat("t", MaxTopicLen+1) }, ErrTooLarge},
		{"born port without address", func(m *Message) { m.BornHost = netip.AddrPortFrom(netip.Addr{}, 80) }, ErrBadHost},
		{"store port without address", func(m *Message) { m.StoreHost = netip.AddrPortFrom(netip.Addr{}, 80) }, ErrBadHost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleMessage()
			tc.edit(m)
			_, err := EncodedSize(m)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			b, err := AppendEncode([]byte("keep"), m)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, "keep", string(b))
			require.Panics(t, func() { Encode(make([]byte, 1<<17), m) })
		})
	}
}

func TestEncode_PanicsWhenDstIsShort(t *testing.T) {
	m := sampleMessage()
	n, err := EncodedSize(m)
	require.NoError(t, err)
	require.Panics(t, func() { Encode(make([]byte, n-1, n+100), m) })
	require.Equal(t, n, Encode(make([]byte, n), m))
}

func TestEncode_DoesNotAllocate(t *testing.T) {
	m := sampleMessage()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1234")
	m.Topic = strings.Repeat("t", 200)
	buf := make([]byte, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		n, err := EncodedSize(m)
		if err != nil {
			t.Fatal(err)
		}
		Encode(buf[:n], m)
	})
	require.Zero(t, allocs)
}

func TestAppendEncode_AppendsAfterExistingBytes(t *testing.T) {
	m := sampleMessage()
	one := mustEncode(t, m)
	b, err := AppendEncode([]byte("xyz"), m)
	require.NoError(t, err)
	require.Equal(t, "xyz", string(b[:3]))
	require.Equal(t, one, b[3:])
}

// randomMessage returns a random valid message: either magic, IPv4 or IPv6
// hosts, empty to large bodies and random properties.
func randomMessage(rng *rand.Rand) *Message {
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	host := func() netip.AddrPort {
		port := uint16(rng.Uint32())
		if rng.IntN(2) == 0 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(randBytes(4))), port)
		}
		a := [16]byte(randBytes(16))
		a[0] = 0x20 // not IPv4-mapped
		return netip.AddrPortFrom(netip.AddrFrom16(a), port)
	}
	var body []byte
	switch rng.IntN(4) {
	case 0: // empty
	case 1:
		body = randBytes(1 + rng.IntN(64<<10))
	default:
		body = randBytes(1 + rng.IntN(512))
	}
	topicLen := 1 + rng.IntN(MaxTopicLenV1)
	if rng.IntN(3) == 0 {
		topicLen = MaxTopicLenV1 + 1 + rng.IntN(400) // MagicV2
	}
	topic := make([]byte, topicLen)
	for i := range topic {
		topic[i] = "abcXYZ019_-%|"[rng.IntN(13)]
	}
	props := map[string]string{}
	for range rng.IntN(6) {
		props[string(topic[:1+rng.IntN(len(topic))])] = strings.Repeat("v", 1+rng.IntN(50))
	}
	m := &Message{
		Topic:                     string(topic),
		QueueID:                   int32(rng.Uint32()),
		Flag:                      int32(rng.Uint32()),
		Body:                      body,
		Properties:                EncodeProperties(props),
		SysFlag:                   int32(rng.Uint32()) &^ (FlagBornHostV6 | FlagStoreHostV6),
		BornTimestamp:             int64(rng.Uint64()),
		BornHost:                  host(),
		StoreTimestamp:            int64(rng.Uint64()),
		StoreHost:                 host(),
		ReconsumeTimes:            int32(rng.Uint32()),
		PreparedTransactionOffset: int64(rng.Uint64()),
		QueueOffset:               int64(rng.Uint64()),
		PhysicalOffset:            int64(rng.Uint64()),
		BodyCRC:                   BodyCRC(body),
	}
	if m.BornHost.Addr().Is6() {
		m.SysFlag |= FlagBornHostV6
	}
	if m.StoreHost.Addr().Is6() {
		m.SysFlag |= FlagStoreHostV6
	}
	return m
}

func TestDecode_RoundTripsRandomMessages(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte
	var want []*Message
	for range 500 {
		m := randomMessage(rng)
		b := mustEncode(t, m)
		got, n, err := Decode(b)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
		require.Equal(t, m, got)
		require.Equal(t, b, mustEncode(t, got))

		all = append(all, b...)
		want = append(want, m)
	}
	// The records concatenated, as in a CommitLog file, decode one by one.
	for i, m := range want {
		got, n, err := Decode(all)
		require.NoError(t, err, "record %d", i)
		require.Equal(t, m, got, "record %d", i)
		all = all[n:]
	}
	require.Empty(t, all)
}

// TestEncodeCRC_MatchesEncode: EncodeCRC writes the bytes Encode writes
// with m.BodyCRC set beforehand, and sets m.BodyCRC.
func TestEncodeCRC_MatchesEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		m := randomMessage(rng)
		want := mustEncode(t, m)
		m.BodyCRC = 0
		got := make([]byte, len(want)+1)
		require.Equal(t, len(want), EncodeCRC(got, m, len(want)), "message %d", i)
		require.Equal(t, want, got[:len(want)], "message %d", i)
		require.Equal(t, BodyCRC(m.Body), m.BodyCRC, "message %d", i)
	}
	m := sampleMessage()
	n, err := EncodedSize(m)
	require.NoError(t, err)
	require.Panics(t, func() { EncodeCRC(make([]byte, n-1), m, n) }, "dst short")
	for _, size := range []int{n - 1, n + 1} {
		dst := make([]byte, n+1)
		require.Panics(t, func() { EncodeCRC(dst, m, size) }, "size %d, want %d", size, n)
		require.Zero(t, binary.BigEndian.Uint64(dst), "TOTALSIZE and MAGICCODE written for a wrong size")
	}
}

func TestDecode_LargeBody(t *testing.T) {
	m := sampleMessage()
	m.Body = bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16) // 4 MiB, RocketMQ's default limit
	m.BodyCRC = BodyCRC(m.Body)
	got, _, err := Decode(mustEncode(t, m))
	require.NoError(t, err)
	require.Equal(t, m, got)
}

// BenchmarkEncode encodes a 1 KiB body: with its CRC given, with the CRC
// computed first and then encoded, or by EncodeCRC as it copies the body.
func BenchmarkEncode(b *testing.B) {
	for _, bc := range []struct {
		name   string
		encode func(dst []byte, m *Message)
	}{
		{"CRC-given", func(dst []byte, m *Message) { Encode(dst, m) }},
		{"two-pass", func(dst []byte, m *Message) { m.BodyCRC = BodyCRC(m.Body); Encode(dst, m) }},
		{"EncodeCRC", func(dst []byte, m *Message) { EncodeCRC(dst, m, len(dst)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := sampleMessage()
			m.Body = bytes.Repeat([]byte{'x'}, 1024)
			m.BodyCRC = BodyCRC(m.Body)
			n, err := EncodedSize(m)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				bc.encode(buf, m)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	m := sampleMessage()
	m.Body = bytes.Repeat([]byte{'x'}, 1024)
	rec := mustEncode(b, m)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Parse(rec)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := LookupProperty(r.Properties(), PropertyTags); !ok {
			b.Fatal("no tags")
		}
	}
}
