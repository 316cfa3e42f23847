package message

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
)

const hexDigits = "0123456789ABCDEF"

// appendHex appends the uppercase hex of b to dst (RocketMQ UtilAll.bytes2string).
func appendHex(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xF])
	}
	return dst
}

// unhex decodes hex digits of either case into dst, which is len(s)/2 long,
// and reports whether s was all hex (RocketMQ UtilAll.string2bytes).
func unhex(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Lengths of message ids in hex characters.
const (
	msgIDLenV4 = 2 * (4 + 4 + 8)  // 32
	msgIDLenV6 = 2 * (16 + 4 + 8) // 56
)

// OffsetMsgID returns the offset message id of the record at CommitLog
// offset offset stored by storeHost (RocketMQ MessageDecoder.createMessageId;
// clients call it offsetMsgId): the uppercase hex of store IP (4 or 16
// bytes) · port int32 · offset int64, 32 characters for IPv4 and 56 for
// IPv6. The host is written as in a record (see Message.StoreHost).
func OffsetMsgID(storeHost netip.AddrPort, offset int64) string {
	var buf [msgIDLenV6]byte
	return string(AppendOffsetMsgID(buf[:0], storeHost, offset))
}

// AppendOffsetMsgID appends OffsetMsgID(storeHost, offset) to dst and
// returns the extended slice. It does not allocate when dst has room.
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, offset int64) []byte {
	var raw [16 + 4 + 8]byte
	n := putHost(raw[:], storeHost)
	be.PutUint64(raw[n:], uint64(offset))
	return appendHex(dst, raw[:n+8])
}

// ParseOffsetMsgID decodes an offset message id (either hex case): 32
// characters for an IPv4 store host, 56 for IPv6 (RocketMQ
// MessageDecoder.decodeMessageId). Errors wrap ErrBadMsgID.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	var raw [16 + 4 + 8]byte
	ipLen := 4
	switch len(id) {
	case msgIDLenV4:
	case msgIDLenV6:
		ipLen = 16
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("message: offset msgId %q is %d characters, want %d or %d: %w",
			id, len(id), msgIDLenV4, msgIDLenV6, ErrBadMsgID)
	}
	b := raw[:len(id)/2]
	if !unhex(b, id) {
		return netip.AddrPort{}, 0, fmt.Errorf("message: offset msgId %q is not hex: %w", id, ErrBadMsgID)
	}
	port := be.Uint32(b[ipLen:])
	if port > 0xFFFF {
		return netip.AddrPort{}, 0, fmt.Errorf("message: offset msgId %q has port %d: %w", id, int32(port), ErrBadMsgID)
	}
	var addr netip.Addr
	if ipLen == 4 {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		addr = netip.AddrFrom16([16]byte(b[:16]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), int64(be.Uint64(b[ipLen+4:])), nil
}

// UniqIDGenerator makes client message ids, the UNIQ_KEY property, laid out
// as RocketMQ's MessageClientIDSetter does: the uppercase hex of
// IP (4 or 16 bytes) · pid int16 · class loader hash int32 · ms since
// 00:00 on the 1st of the current month int32 · counter int16, so 32
// characters for IPv4 and 56 for IPv6. The broker adds one when a producer
// did not. A UniqIDGenerator is safe for concurrent use.
type UniqIDGenerator struct {
	prefix  [16 + 2 + 4]byte // IP · pid · class loader hash
	ipLen   int              // 4 or 16
	counter atomic.Uint32    // only the low 16 bits are used
	// month is the month of the last id, kept as MessageClientIDSetter
	// keeps startTime and nextStartTime: working out a month's start
	// costs more than the rest of an id.
	month atomic.Pointer[monthSpan]
}

// monthSpan is one month in one location: [start, next) in Unix ms.
type monthSpan struct {
	start, next int64
	loc         *time.Location
}

// NewUniqIDGenerator returns a generator for ids carrying ip (an IPv4 or
// IPv4-mapped address gives 32-character ids, IPv6 56; an invalid one is
// written as 0.0.0.0), pid and classLoaderHash (Java's
// MessageClientIDSetter.class.getClassLoader().hashCode(); any number that
// tells apart generators in one process). The counter starts at 0.
func NewUniqIDGenerator(ip netip.Addr, pid int16, classLoaderHash int32) *UniqIDGenerator {
	g := &UniqIDGenerator{ipLen: 4}
	ip = ip.Unmap()
	if ip.Is6() {
		a := ip.As16()
		g.ipLen = copy(g.prefix[:], a[:])
	} else if ip.Is4() {
		a := ip.As4()
		copy(g.prefix[:], a[:])
	}
	be.PutUint16(g.prefix[g.ipLen:], uint16(pid))
	be.PutUint32(g.prefix[g.ipLen+2:], uint32(classLoaderHash))
	return g
}

// Next returns a new id for a message born at now. The month start is taken
// in now's location (RocketMQ uses the JVM's default time zone, so pass
// time.Now() or a time in the broker's zone).
func (g *UniqIDGenerator) Next(now time.Time) string {
	var buf [msgIDLenV6]byte
	return string(g.AppendNext(buf[:0], now))
}

// AppendNext appends Next(now) to dst and returns the extended slice. It
// does not allocate when dst has room.
func (g *UniqIDGenerator) AppendNext(dst []byte, now time.Time) []byte {
	var raw [16 + 2 + 4 + 4 + 2]byte
	n := copy(raw[:], g.prefix[:g.ipLen+6])
	// The span is written as 32 bits and read back unsigned; a month of
	// 31 days (2.68e9 ms) overflows int32 but not uint32.
	be.PutUint32(raw[n:], uint32(g.sinceMonthStart(now)))
	be.PutUint16(raw[n+4:], uint16(g.counter.Add(1)-1))
	return appendHex(dst, raw[:n+6])
}

// sinceMonthStart is the ms from 00:00 on the 1st of now's month (in now's
// location) to now.
func (g *UniqIDGenerator) sinceMonthStart(now time.Time) int64 {
	ms := now.UnixMilli()
	m := g.month.Load()
	if m == nil || ms < m.start || ms >= m.next || m.loc != now.Location() {
		m = &monthSpan{
			start: monthStart(now, 0).UnixMilli(),
			next:  monthStart(now, 1).UnixMilli(),
			loc:   now.Location(),
		}
		g.month.Store(m)
	}
	return ms - m.start
}

// monthStart returns 00:00 on the 1st of t's month plus delta months, in
// t's location.
func monthStart(t time.Time, delta int) time.Time {
	return time.Date(t.Year(), t.Month()+time.Month(delta), 1, 0, 0, 0, 0, t.Location())
}

// UniqID is a decoded client message id; see UniqIDGenerator.
type UniqID struct {
	Addr netip.Addr // 4-byte or 16-byte address, as stored
	Pid  int16
	// Time is when the id was made, rebuilt from its ms-in-month span; see
	// ParseUniqID.
	Time    time.Time
	Counter int16
	// ClassLoaderHash is the class loader hash the id was made with.
	ClassLoaderHash int32
}

// ParseUniqID decodes a client message id (either hex case): 32 characters
// for IPv4, 56 for IPv6. Like MessageClientIDSetter.getNearlyTimeFromID it
// adds the ms span to the start of now's month, or of the month before if
// the result would not be before now; Time is in now's location. Errors
// wrap ErrBadMsgID.
func ParseUniqID(id string, now time.Time) (UniqID, error) {
	var raw [16 + 2 + 4 + 4 + 2]byte
	ipLen := 4
	switch len(id) {
	case msgIDLenV4:
	case msgIDLenV6:
		ipLen = 16
	default:
		return UniqID{}, fmt.Errorf("message: UNIQ_KEY %q is %d characters, want %d or %d: %w",
			id, len(id), msgIDLenV4, msgIDLenV6, ErrBadMsgID)
	}
	b := raw[:len(id)/2]
	if !unhex(b, id) {
		return UniqID{}, fmt.Errorf("message: UNIQ_KEY %q is not hex: %w", id, ErrBadMsgID)
	}
	u := UniqID{
		Pid:             int16(be.Uint16(b[ipLen:])),
		ClassLoaderHash: int32(be.Uint32(b[ipLen+2:])),
		Counter:         int16(be.Uint16(b[ipLen+10:])),
	}
	if ipLen == 4 {
		u.Addr = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		u.Addr = netip.AddrFrom16([16]byte(b[:16]))
	}
	span := int64(be.Uint32(b[ipLen+6:]))
	start := monthStart(now, 0).UnixMilli()
	if start+span >= now.UnixMilli() {
		start = monthStart(now, -1).UnixMilli()
	}
	u.Time = time.UnixMilli(start + span).In(now.Location())
	return u, nil
}
