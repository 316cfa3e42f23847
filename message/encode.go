package message

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
)

var be = binary.BigEndian

// Positions of the fixed fields that come before BORNHOST. The fields after
// it move by 12 bytes for each IPv6 host; see Record.
const (
	posTotalSize      = 0
	posMagic          = 4
	posBodyCRC        = 8
	posQueueID        = 12
	posFlag           = 16
	posQueueOffset    = 20
	posPhysicalOffset = 28
	posSysFlag        = 36
	posBornTimestamp  = 40
	posBornHost       = 48
)

// hostAddrLen returns how many address bytes h takes in a record (4 or 16),
// or -1 when h has a port but no address.
func hostAddrLen(h netip.AddrPort) int {
	a := h.Addr()
	switch {
	case a.Is4() || a.Is4In6():
		return 4
	case a.Is6():
		return 16
	case h.Port() != 0:
		return -1
	default:
		return 4 // the zero AddrPort is stored as 0.0.0.0:0
	}
}

// putHost writes h as address·port int32 and returns the bytes written
// (8 or 20). The caller has checked h with hostAddrLen.
func putHost(b []byte, h netip.AddrPort) int {
	a := h.Addr()
	if !a.Is4() {
		return putHostSlow(b, h)
	}
	w := (*[8]byte)(b)
	be.PutUint32(w[:], binaryIPv4(a))
	be.PutUint32(w[4:], uint32(h.Port()))
	return 8
}

// binaryIPv4 is an IPv4 address as a big-endian number.
func binaryIPv4(a netip.Addr) uint32 {
	a4 := a.As4()
	return be.Uint32(a4[:])
}

func putHostSlow(b []byte, h netip.AddrPort) int {
	a := h.Addr().Unmap()
	if a.Is6() {
		a16 := a.As16()
		copy(b, a16[:])
		be.PutUint32(b[16:], uint32(h.Port()))
		return 20
	}
	var a4 [4]byte
	if a.Is4() {
		a4 = a.As4()
	}
	copy(b, a4[:])
	be.PutUint32(b[4:], uint32(h.Port()))
	return 8
}

// EncodedSize checks that m fits the record format and returns the length
// of its record. It checks that Properties is at most MaxPropertiesLen
// bytes, Topic at most MaxTopicLen bytes (records with topics longer than
// MaxTopicLenV1 use MagicV2), the hosts are valid or zero, and the record
// is under 2 GiB. It does not check the topic's characters (see
// ValidateTopic) and does not allocate unless it fails.
func EncodedSize(m *Message) (int, error) {
	if len(m.Properties) > MaxPropertiesLen {
		return 0, fmt.Errorf("message: properties are %d bytes, the limit is %d: %w",
			len(m.Properties), MaxPropertiesLen, ErrTooLarge)
	}
	if i := strings.IndexByte(m.Properties, 0); i >= 0 {
		return 0, fmt.Errorf("message: the properties hold a NUL byte at %d: %w", i, ErrBadProperties)
	}
	if len(m.Topic) > MaxTopicLen {
		return 0, fmt.Errorf("message: topic is %d bytes, the limit is %d: %w",
			len(m.Topic), MaxTopicLen, ErrTooLarge)
	}
	born, store := hostAddrLen(m.BornHost), hostAddrLen(m.StoreHost)
	if born < 0 {
		return 0, fmt.Errorf("message: born host %v has a port but no address: %w", m.BornHost, ErrBadHost)
	}
	if store < 0 {
		return 0, fmt.Errorf("message: store host %v has a port but no address: %w", m.StoreHost, ErrBadHost)
	}
	size := int64(MinRecordSize) + int64(len(m.Body)) + int64(len(m.Topic)) + int64(len(m.Properties))
	size += int64(born-4) + int64(store-4) // +12 per IPv6 host
	if len(m.Topic) > MaxTopicLenV1 {
		size++ // 2-byte topic length
	}
	if size > math.MaxInt32 {
		return 0, fmt.Errorf("message: record would be %d bytes, the limit is %d: %w",
			size, math.MaxInt32, ErrTooLarge)
	}
	return int(size), nil
}

// Encode writes m as one record into dst and returns its length n. The
// caller must have checked m with EncodedSize; Encode panics if m is
// invalid or dst is shorter than n. Encode does not allocate, so the
// CommitLog can encode straight into a mapped file.
//
// Encode picks MagicV1, or MagicV2 for topics longer than MaxTopicLenV1,
// and sets FlagBornHostV6 and FlagStoreHostV6 in the written SYSFLAG to
// match the hosts; m.SysFlag is left as is. BODYCRC is m.BodyCRC as is.
func Encode(dst []byte, m *Message) int {
	size, err := EncodedSize(m)
	if err != nil {
		panic(err)
	}
	if len(dst) < size {
		panic("message: Encode: dst is shorter than the record")
	}
	encode(dst[:size:size], m, false)
	return size
}

// EncodeCRC is Encode for a message already checked: size is what
// EncodedSize returned for m. It computes the body CRC as it copies the
// body, in one pass over it, rather than writing m.BodyCRC as is: it sets
// m.BodyCRC to BodyCRC(m.Body) and writes that. It panics if dst is
// shorter than size or size is not m's record length; then it has written
// no TOTALSIZE, so the bytes are no record.
func EncodeCRC(dst []byte, m *Message, size int) int {
	encode(dst[:size:size], m, true)
	return size
}

// AppendEncode appends the record of m to dst and returns the extended
// slice, or dst unchanged and the EncodedSize error.
func AppendEncode(dst []byte, m *Message) ([]byte, error) {
	size, err := EncodedSize(m)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, size)
	n := len(dst)
	dst = dst[:n+size]
	encode(dst[n:], m, false)
	return dst, nil
}

// encode writes m into b, which is exactly its record length. TOTALSIZE
// and MAGICCODE go last: a process killed while encoding into a mapped
// file leaves them zero (the bytes of a new or truncated file), which
// recovery reads as the end of the log, rather than a record whose body
// checks out and whose properties are torn. With crc, encode computes the
// body CRC while copying the body and sets m.BodyCRC.
func encode(b []byte, m *Message, crc bool) {
	magic := MagicV1
	if len(m.Topic) > MaxTopicLenV1 {
		magic = MagicV2
	}
	var p int
	if m.BornHost.Addr().Is4() && m.StoreHost.Addr().Is4() {
		p = encodeHeaderIPv4(b, m) // the common case, without bounds checks
	} else {
		p = encodeHeader(b, m)
	}
	if crc {
		m.BodyCRC = copyCRC(b[p:], m.Body, 0) & 0x7FFFFFFF
		p += len(m.Body)
	} else {
		p += copy(b[p:], m.Body)
	}
	be.PutUint32(b[posBodyCRC:], m.BodyCRC)
	if magic == MagicV1 {
		b[p] = byte(len(m.Topic))
		p++
	} else {
		be.PutUint16(b[p:], uint16(len(m.Topic)))
		p += 2
	}
	p += copy(b[p:], m.Topic)
	be.PutUint16(b[p:], uint16(len(m.Properties)))
	p += 2
	if p+len(m.Properties) != len(b) {
		panic("message: encode: the record's length is not the size given")
	}
	copy(b[p:], m.Properties)
	// After the copy, a call: the compiler does not move it before.
	be.PutUint64(b[posTotalSize:], uint64(len(b))<<32|uint64(uint32(magic)))
}

// posBodyIPv4 is where the body starts in a record with IPv4 hosts.
const posBodyIPv4 = posBornHost + 8 + 8 + 8 + 16

// encodeHeaderIPv4 writes the fields from QUEUEID to BODY's length of a
// record whose hosts are both IPv4, with the sysflag's IPv6 bits cleared,
// and returns where the body starts.
func encodeHeaderIPv4(b []byte, m *Message) int {
	h := (*[posBodyIPv4]byte)(b) // constant offsets: one bounds check
	putFixedFields((*[posBornHost]byte)(h[:]), m, m.SysFlag&^(FlagBornHostV6|FlagStoreHostV6))
	be.PutUint32(h[posBornHost:], binaryIPv4(m.BornHost.Addr()))
	be.PutUint32(h[posBornHost+4:], uint32(m.BornHost.Port()))
	be.PutUint64(h[posBornHost+8:], uint64(m.StoreTimestamp))
	be.PutUint32(h[posBornHost+16:], binaryIPv4(m.StoreHost.Addr()))
	be.PutUint32(h[posBornHost+20:], uint32(m.StoreHost.Port()))
	putTailFields((*[16]byte)(h[posBornHost+24:]), m)
	return posBodyIPv4
}

// encodeHeader is encodeHeaderIPv4 for hosts of either kind: it sets the
// sysflag's IPv6 bits to match them.
func encodeHeader(b []byte, m *Message) int {
	p := posBornHost
	born := putHost(b[p:], m.BornHost)
	p += born
	be.PutUint64(b[p:], uint64(m.StoreTimestamp))
	p += 8
	store := putHost(b[p:], m.StoreHost)
	p += store
	sys := m.SysFlag &^ (FlagBornHostV6 | FlagStoreHostV6)
	if born == 20 {
		sys |= FlagBornHostV6
	}
	if store == 20 {
		sys |= FlagStoreHostV6
	}
	putFixedFields((*[posBornHost]byte)(b), m, sys)
	putTailFields((*[16]byte)(b[p:]), m)
	return p + 16
}

// putFixedFields writes the fields from QUEUEID to BORNTIMESTAMP, at the
// same offsets in every record, with sys as the SYSFLAG.
func putFixedFields(h *[posBornHost]byte, m *Message, sys int32) {
	be.PutUint32(h[posQueueID:], uint32(m.QueueID))
	be.PutUint32(h[posFlag:], uint32(m.Flag))
	be.PutUint64(h[posQueueOffset:], uint64(m.QueueOffset))
	be.PutUint64(h[posPhysicalOffset:], uint64(m.PhysicalOffset))
	be.PutUint32(h[posSysFlag:], uint32(sys))
	be.PutUint64(h[posBornTimestamp:], uint64(m.BornTimestamp))
}

// putTailFields writes RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET and the
// body's length, the 16 bytes after STOREHOST.
func putTailFields(t *[16]byte, m *Message) {
	be.PutUint32(t[0:], uint32(m.ReconsumeTimes))
	be.PutUint64(t[4:], uint64(m.PreparedTransactionOffset))
	be.PutUint32(t[12:], uint32(len(m.Body)))
}
