package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// fuzzSeeds returns valid records of several shapes and mutated copies.
func fuzzSeeds() [][]byte {
	v1 := sampleMessage()
	v2 := sampleMessage()
	v2.Topic = strings.Repeat("L", 130)
	v2.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1")
	v2.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:2")
	mixed := sampleMessage()
	mixed.StoreHost = netip.MustParseAddrPort("[2001:db8::3]:3")
	empty := &Message{}

	var seeds [][]byte
	for _, m := range []*Message{v1, v2, mixed, empty} {
		b, err := AppendEncode(nil, m)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, b)
		seeds = append(seeds, b[:len(b)-1])                                    // torn
		seeds = append(seeds, append(bytes.Clone(b), b...))                    // two records
		seeds = append(seeds, patchBytes(b, 36, 0x30))                         // IPv6 flags flipped
		seeds = append(seeds, patchBytes(b, 84, 0x7F))                         // body length
		seeds = append(seeds, patchBytes(b, len(b)-len(m.Properties)-2, 0xFF)) // props length
	}
	blank := make([]byte, 16)
	binary.BigEndian.PutUint32(blank, 16)
	copy(blank[4:], []byte{0xCB, 0xD4, 0x31, 0x94})
	return append(seeds, blank, nil)
}

func patchBytes(b []byte, pos int, v byte) []byte {
	c := bytes.Clone(b)
	c[pos] ^= v
	return c
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		if int(r.TotalSize()) != len(r) || !bytes.Equal(r, b[:len(r)]) {
			t.Fatalf("record is %d bytes, TOTALSIZE %d", len(r), r.TotalSize())
		}
		// Every accessor must stay inside the record.
		_ = r.CheckCRC()
		_, _ = LookupProperty(r.Properties(), PropertyTags)
		_ = r.Message()
		_, _, _ = r.BornHost(), r.StoreHost(), r.ReconsumeTimes()
		_ = r.PreparedTransactionOffset()
		r.SetStoreTimestamp(1)
	})
}

func FuzzDecode(f *testing.F) {
	for _, s := range append(fuzzSeeds(), nonCanonicalSeeds()...) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		// Random bytes almost never carry the right CRC; fixing it lets the
		// fuzzer reach the round trip with records it made up.
		if r, err := Parse(b); err == nil && fixCRC {
			b = bytes.Clone(b)
			binary.BigEndian.PutUint32(b[posBodyCRC:], BodyCRC(r.Body()))
		}
		m, n, err := Decode(b)
		if err != nil {
			return
		}
		again, err := AppendEncode(nil, m)
		if errors.Is(err, ErrBadProperties) && strings.IndexByte(m.Properties, 0) >= 0 {
			return // read, as RocketMQ writes them, but never written (see EncodedSize)
		}
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		if canonical(Record(b[:n])) {
			if !bytes.Equal(again, b[:n]) {
				t.Fatalf("decode/encode round trip differs:\n in  %x\n out %x", b[:n], again)
			}
			return
		}
		// A record Encode would not write must still re-encode to one that
		// decodes to the same message (host bits and magic aside).
		m2, _, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		const hostBits = FlagBornHostV6 | FlagStoreHostV6
		m.SysFlag &^= hostBits
		m2.SysFlag &^= hostBits
		m.BornHost = netip.AddrPortFrom(m.BornHost.Addr().Unmap(), m.BornHost.Port())
		m.StoreHost = netip.AddrPortFrom(m.StoreHost.Addr().Unmap(), m.StoreHost.Port())
		m2.BornHost = netip.AddrPortFrom(m2.BornHost.Addr().Unmap(), m2.BornHost.Port())
		m2.StoreHost = netip.AddrPortFrom(m2.StoreHost.Addr().Unmap(), m2.StoreHost.Port())
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoded record decodes differently:\n %+v\n %+v", m, m2)
		}
	})
}

// canonical reports whether r is exactly what Encode writes: MagicV2 only
// for long topics and no IPv4-mapped address stored as IPv6.
func canonical(r Record) bool {
	if (r.Magic() == MagicV2) != (len(r.Topic()) > MaxTopicLenV1) {
		return false
	}
	return !r.BornHost().Addr().Is4In6() && !r.StoreHost().Addr().Is4In6()
}

// nonCanonicalSeeds returns valid records that Encode would not write: a
// MagicV2 record with a short topic and IPv4-mapped addresses stored as
// IPv6.
func nonCanonicalSeeds() [][]byte {
	m := sampleMessage()
	v1, err := AppendEncode(nil, m)
	if err != nil {
		panic(err)
	}
	topicLenPos := 88 + len(m.Body)
	v2 := append([]byte(nil), v1[:topicLenPos]...)
	v2 = binary.BigEndian.AppendUint16(v2, uint16(len(m.Topic)))
	v2 = append(v2, v1[topicLenPos+1:]...)
	binary.BigEndian.PutUint32(v2, uint32(len(v2)))
	binary.BigEndian.PutUint32(v2[4:], 0xDAA320AB)

	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1")
	m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:2")
	mapped, err := AppendEncode(nil, m)
	if err != nil {
		panic(err)
	}
	a := netip.MustParseAddr("::ffff:10.0.0.1").As16()
	copy(mapped[48:], a[:])
	copy(mapped[48+20+8:], a[:])
	return [][]byte{v2, mapped}
}

func TestFuzzSeeds_NonCanonicalRecordsDecode(t *testing.T) {
	for _, b := range nonCanonicalSeeds() {
		r, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		if canonical(r) {
			t.Fatalf("seed %x is canonical", b)
		}
		if _, _, err := Decode(b); err != nil {
			t.Fatal(err)
		}
	}
}
