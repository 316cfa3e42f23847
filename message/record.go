package message

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
)

// Record is a view of one encoded record, as returned by Parse. Its methods
// read and patch fields in place without copying; returned slices alias the
// record and are valid as long as its bytes are (for a mapped CommitLog
// file: until the mapping is released). Calling the methods on bytes that
// did not pass Parse may panic.
type Record []byte

// PeekHeader returns TOTALSIZE and MAGICCODE from the first 8 bytes of b,
// with ok false if b is shorter than that. It checks nothing else; use it to
// step over a MagicBlank record, whose size is the bytes left in the file.
func PeekHeader(b []byte) (size int32, magic int32, ok bool) {
	if len(b) < 8 {
		return 0, 0, false
	}
	return int32(be.Uint32(b[posTotalSize:])), int32(be.Uint32(b[posMagic:])), true
}

// Parse checks that b starts with a well-formed record and returns it,
// b[:TOTALSIZE]. The errors, all usable with errors.Is:
//
//   - io.ErrUnexpectedEOF (wrapped) if b is shorter than 8 bytes or than
//     TOTALSIZE: a torn write or a read that stopped short;
//   - ErrBlank (not wrapped) for the END_OF_FILE record (MagicBlank);
//   - ErrCorrupt (wrapped) for any other magic, a TOTALSIZE below the
//     minimum, a negative or overrunning body, topic or properties length,
//     a last field that does not end exactly at TOTALSIZE, or a port
//     outside 0..65535.
//
// Parse does not check BODYCRC (see Record.CheckCRC), never panics and does
// not allocate unless it fails. A v1 topic length byte is signed, as in
// RocketMQ, so it is at most 127.
func Parse(b []byte) (Record, error) {
	size, magic, ok := PeekHeader(b)
	if !ok {
		return nil, fmt.Errorf("message: %d bytes can't hold a record header: %w", len(b), io.ErrUnexpectedEOF)
	}
	topicLenSize := 1
	switch magic {
	case MagicV1:
	case MagicV2:
		topicLenSize = 2
	case MagicBlank:
		return nil, ErrBlank
	default:
		return nil, fmt.Errorf("message: bad magic code %#08x: %w", uint32(magic), ErrCorrupt)
	}
	if minSize := int32(MinRecordSize - 1 + topicLenSize); size < minSize {
		return nil, fmt.Errorf("message: TOTALSIZE %d is below the minimum %d: %w", size, minSize, ErrCorrupt)
	}
	if int64(size) > int64(len(b)) {
		return nil, fmt.Errorf("message: record is %d bytes, only %d available: %w", size, len(b), io.ErrUnexpectedEOF)
	}
	r := Record(b[:size:size])
	n := int(size)

	// From here n ≥ MinRecordSize, so the fixed fields up to SYSFLAG fit.
	sys := r.SysFlag()
	born, store := hostLen(sys, FlagBornHostV6), hostLen(sys, FlagStoreHostV6)
	p := posBornHost + born + 8 + store + 12 // BODY length field
	if p+4+topicLenSize+2 > n {
		return nil, fmt.Errorf("message: TOTALSIZE %d is too small for IPv6 hosts (sysflag %#x): %w", n, sys, ErrCorrupt)
	}
	if port := be.Uint32(r[posBornHost+born-4:]); port > 0xFFFF {
		return nil, fmt.Errorf("message: born host port %d is out of range: %w", int32(port), ErrCorrupt)
	}
	if port := be.Uint32(r[posBornHost+born+8+store-4:]); port > 0xFFFF {
		return nil, fmt.Errorf("message: store host port %d is out of range: %w", int32(port), ErrCorrupt)
	}

	bodyLen := int32(be.Uint32(r[p:]))
	p += 4
	// The topic and properties length fields still have to fit after the body.
	if bodyLen < 0 || int64(bodyLen) > int64(n-p-topicLenSize-2) {
		return nil, fmt.Errorf("message: body length %d overruns the record of %d bytes: %w", bodyLen, n, ErrCorrupt)
	}
	p += int(bodyLen)

	var topicLen int
	if topicLenSize == 1 {
		topicLen = int(int8(r[p]))
	} else {
		topicLen = int(int16(be.Uint16(r[p:])))
	}
	p += topicLenSize
	if topicLen < 0 || topicLen > n-p-2 {
		return nil, fmt.Errorf("message: topic length %d overruns the record of %d bytes: %w", topicLen, n, ErrCorrupt)
	}
	p += topicLen

	propsLen := int(int16(be.Uint16(r[p:])))
	p += 2
	if propsLen != n-p {
		return nil, fmt.Errorf("message: properties length %d, but %d bytes are left in the record: %w",
			propsLen, n-p, ErrCorrupt)
	}
	return r, nil
}

// Decode parses the record at the start of b, checks its body CRC and
// returns a copy of it as a Message, with the bytes it took (TOTALSIZE).
// Errors are those of Parse and Record.CheckCRC; n is 0 on error.
func Decode(b []byte) (m *Message, n int, err error) {
	r, err := Parse(b)
	if err != nil {
		return nil, 0, err
	}
	if err := r.CheckCRC(); err != nil {
		return nil, 0, err
	}
	return r.Message(), len(r), nil
}

// hostLen returns the stored length (address + port) of the host whose
// IPv6 bit in sys is flag.
func hostLen(sys, flag int32) int {
	if sys&flag != 0 {
		return 20
	}
	return 8
}

func (r Record) i32(p int) int32 { return int32(be.Uint32(r[p:])) }
func (r Record) i64(p int) int64 { return int64(be.Uint64(r[p:])) }

// Field positions after BORNHOST, which depend on the host address sizes.
func (r Record) bornLen() int  { return hostLen(r.SysFlag(), FlagBornHostV6) }
func (r Record) storeLen() int { return hostLen(r.SysFlag(), FlagStoreHostV6) }
func (r Record) posStoreTimestamp() int {
	return posBornHost + r.bornLen()
}
func (r Record) posStoreHost() int { return r.posStoreTimestamp() + 8 }
func (r Record) posReconsumeTimes() int {
	return r.posStoreHost() + r.storeLen()
}
func (r Record) posBodyLen() int { return r.posReconsumeTimes() + 12 }
func (r Record) posTopicLen() int {
	p := r.posBodyLen()
	return p + 4 + int(be.Uint32(r[p:]))
}

// topicBounds returns where the topic bytes start and end.
func (r Record) topicBounds() (start, end int) {
	p := r.posTopicLen()
	if r.Magic() == MagicV2 {
		return p + 2, p + 2 + int(be.Uint16(r[p:]))
	}
	return p + 1, p + 1 + int(r[p])
}

// TotalSize returns TOTALSIZE, the record length including this field.
func (r Record) TotalSize() int32 { return r.i32(posTotalSize) }

// Magic returns MAGICCODE: MagicV1 or MagicV2.
func (r Record) Magic() int32 { return r.i32(posMagic) }

// BodyCRC returns the stored BODYCRC.
func (r Record) BodyCRC() uint32 { return be.Uint32(r[posBodyCRC:]) }

// QueueID returns QUEUEID.
func (r Record) QueueID() int32 { return r.i32(posQueueID) }

// Flag returns FLAG, the producer's Message.flag.
func (r Record) Flag() int32 { return r.i32(posFlag) }

// QueueOffset returns QUEUEOFFSET, the message's ConsumeQueue index.
func (r Record) QueueOffset() int64 { return r.i64(posQueueOffset) }

// PhysicalOffset returns PHYSICALOFFSET, the record's CommitLog offset.
func (r Record) PhysicalOffset() int64 { return r.i64(posPhysicalOffset) }

// SysFlag returns SYSFLAG (MessageSysFlag bits).
func (r Record) SysFlag() int32 { return r.i32(posSysFlag) }

// BornTimestamp returns BORNTIMESTAMP, ms since the epoch.
func (r Record) BornTimestamp() int64 { return r.i64(posBornTimestamp) }

// BornHost returns BORNHOST. A 16-byte address is returned as is, even if it
// is IPv4-mapped.
func (r Record) BornHost() netip.AddrPort {
	return readHost(r[posBornHost:], r.SysFlag()&FlagBornHostV6 != 0)
}

// StoreTimestamp returns STORETIMESTAMP, ms since the epoch.
func (r Record) StoreTimestamp() int64 { return r.i64(r.posStoreTimestamp()) }

// StoreHost returns STOREHOST. A 16-byte address is returned as is.
func (r Record) StoreHost() netip.AddrPort {
	return readHost(r[r.posStoreHost():], r.SysFlag()&FlagStoreHostV6 != 0)
}

// ReconsumeTimes returns RECONSUMETIMES.
func (r Record) ReconsumeTimes() int32 { return r.i32(r.posReconsumeTimes()) }

// PreparedTransactionOffset returns the PREPARED TX OFFSET field.
func (r Record) PreparedTransactionOffset() int64 { return r.i64(r.posReconsumeTimes() + 4) }

// Body returns the stored body bytes (compressed if SysFlag says so),
// aliasing r.
func (r Record) Body() []byte {
	p := r.posBodyLen()
	start := p + 4
	end := start + int(be.Uint32(r[p:]))
	return r[start:end:end]
}

// Topic returns the topic bytes, aliasing r.
func (r Record) Topic() []byte {
	start, end := r.topicBounds()
	return r[start:end:end]
}

// Properties returns the encoded properties bytes, aliasing r; read them
// with LookupProperty or ParseProperties.
func (r Record) Properties() []byte {
	_, end := r.topicBounds()
	return r[end+2 : len(r) : len(r)]
}

// CheckCRC compares BODYCRC with BodyCRC(Body()) and returns a wrapped
// ErrCorrupt that gives both values if they differ.
func (r Record) CheckCRC() error {
	want := r.BodyCRC()
	if got := BodyCRC(r.Body()); got != want {
		return fmt.Errorf("message: BODYCRC is %d but the body's CRC is %d: %w", want, got, ErrCorrupt)
	}
	return nil
}

// CheckWhole reports a record holding bytes no put writes where its body
// CRC does not reach: a topic character outside TopicValidator's set, or a
// NUL in the properties (EncodedSize refuses both). A record torn by a
// crash, a page of it never written and so zero, shows them. It wraps
// ErrCorrupt.
func (r Record) CheckWhole() error {
	for i, c := range r.Topic() {
		if !validTopicChar(c) {
			return fmt.Errorf("message: the topic holds %q at byte %d: %w", c, i, ErrCorrupt)
		}
	}
	if i := bytes.IndexByte(r.Properties(), 0); i >= 0 {
		return fmt.Errorf("message: the properties hold a NUL byte at %d: %w", i, ErrCorrupt)
	}
	return nil
}

// SetQueueOffset patches QUEUEOFFSET in place.
func (r Record) SetQueueOffset(v int64) { be.PutUint64(r[posQueueOffset:], uint64(v)) }

// SetPhysicalOffset patches PHYSICALOFFSET in place.
func (r Record) SetPhysicalOffset(v int64) { be.PutUint64(r[posPhysicalOffset:], uint64(v)) }

// SetStoreTimestamp patches STORETIMESTAMP in place.
func (r Record) SetStoreTimestamp(v int64) { be.PutUint64(r[r.posStoreTimestamp():], uint64(v)) }

// Message returns a copy of the record as a Message: the Body and strings
// are copied, so the Message outlives r. SysFlag keeps the IPv6 host bits
// as stored.
func (r Record) Message() *Message {
	m := &Message{
		Topic:                     string(r.Topic()),
		QueueID:                   r.QueueID(),
		Flag:                      r.Flag(),
		Properties:                string(r.Properties()),
		SysFlag:                   r.SysFlag(),
		BornTimestamp:             r.BornTimestamp(),
		BornHost:                  r.BornHost(),
		StoreTimestamp:            r.StoreTimestamp(),
		StoreHost:                 r.StoreHost(),
		ReconsumeTimes:            r.ReconsumeTimes(),
		PreparedTransactionOffset: r.PreparedTransactionOffset(),
		QueueOffset:               r.QueueOffset(),
		PhysicalOffset:            r.PhysicalOffset(),
		BodyCRC:                   r.BodyCRC(),
	}
	if body := r.Body(); len(body) > 0 {
		m.Body = append([]byte(nil), body...)
	}
	return m
}

// readHost reads address·port int32 from b; Parse has checked the port.
func readHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), uint16(be.Uint32(b[16:])))
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(be.Uint32(b[4:])))
}
