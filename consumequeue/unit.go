package consumequeue

import (
	"encoding/binary"
	"math"
)

// UnitSize is the length of one ConsumeQueue unit in bytes
// (RocketMQ's CQ_STORE_UNIT_SIZE).
const UnitSize = 20

// DefaultFileUnits is the number of units in one file by default: 300,000,
// so a file is 6,000,000 bytes (mappedFileSizeConsumeQueue).
const DefaultFileUnits = 300_000

// placeholderSize is the size field of the units that fill the slots before
// the first message of a queue whose first file starts at a non-zero index
// (RocketMQ's fillPreBlank). No message is that large.
const placeholderSize = math.MaxInt32

// Unit is one ConsumeQueue entry: where a message is in the CommitLog, its
// size there, and its tags hash code (for delayed messages, the delivery
// time in ms).
type Unit struct {
	Offset   int64 // CommitLog offset of the message record
	Size     int32 // length of the record in bytes
	TagsCode int64 // tags hash code; 0 when the message has no tags
}

// valid is RocketMQ's test for a written unit (offset ≥ 0 ∧ size > 0), plus
// offset+size must not overflow.
func (u Unit) valid() bool {
	return u.Offset >= 0 && u.Size > 0 && u.Offset <= math.MaxInt64-int64(u.Size)
}

// isPlaceholder reports whether u is a fill unit (0, 0x7FFFFFFF, 0).
func (u Unit) isPlaceholder() bool {
	return u.Offset == 0 && u.Size == placeholderSize && u.TagsCode == 0
}

// end is the CommitLog offset just after the message.
func (u Unit) end() int64 { return u.Offset + int64(u.Size) }

var placeholder = Unit{Offset: 0, Size: placeholderSize, TagsCode: 0}

// encodeUnit writes u into b[:UnitSize].
func encodeUnit(b []byte, u Unit) {
	_ = b[UnitSize-1]
	binary.BigEndian.PutUint64(b[0:8], uint64(u.Offset))
	binary.BigEndian.PutUint32(b[8:12], uint32(u.Size))
	binary.BigEndian.PutUint64(b[12:20], uint64(u.TagsCode))
}

// decodeUnit reads the unit in b[:UnitSize].
func decodeUnit(b []byte) Unit {
	_ = b[UnitSize-1]
	return Unit{
		Offset:   int64(binary.BigEndian.Uint64(b[0:8])),
		Size:     int32(binary.BigEndian.Uint32(b[8:12])),
		TagsCode: int64(binary.BigEndian.Uint64(b[12:20])),
	}
}

// scanState carries what a recovery scan has seen from one file to the next.
type scanState struct {
	real bool  // a real (non-placeholder) unit has been seen
	end  int64 // end() of the last real unit, if real
}

// scanUnits returns how many whole units at the start of b are valid,
// continuing the scan described by st, and updates st. The scan stops at the
// first unit that is
//   - invalid (not offset ≥ 0 ∧ size > 0; an all-zero unit is one),
//   - a placeholder after a real unit (placeholders only lead a queue), or
//   - a real unit that starts before the previous real unit ends: CommitLog
//     offsets only grow within a queue, so such a unit was torn by a crash
//     (RocketMQ does not check this).
func scanUnits(b []byte, st *scanState) int {
	n := 0
	for ; n*UnitSize+UnitSize <= len(b); n++ {
		u := decodeUnit(b[n*UnitSize:])
		switch {
		case !u.valid():
			return n
		case u.isPlaceholder():
			if st.real {
				return n
			}
		case st.real && u.Offset < st.end:
			return n
		default:
			st.real, st.end = true, u.end()
		}
	}
	return n
}
