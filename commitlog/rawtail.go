package commitlog

import (
	"encoding/binary"

	"github.com/rocketstore/rocketstore/message"
)

// rawHeadMax is the most of a record's head rawTail needs: up to and
// including STORETIMESTAMP after an IPv6 BORNHOST.
const rawHeadMax = 48 + 20 + 8

// Positions in a record's head (see package message).
const (
	rawPosSysFlag   = 36
	rawPosBornHost  = 48
	rawBornHostV4   = 8
	rawBornHostV6   = 20
	rawHeadForFlags = rawPosSysFlag + 4
)

// rawTail follows the record boundaries of bytes appended by AppendRaw,
// which come in pieces that start and end anywhere in a record: it knows
// where the next record starts, and the store time of the last whole one
// (the stamp the checkpoint's physicMsgTimestamp is taken from). It reads
// only the head of each record, as the bytes pass. Guarded by the put lock.
type rawTail struct {
	// next is the log offset where the first record not yet whole starts;
	// -1 once the bytes stopped looking like records (lost).
	next int64
	head [rawHeadMax]byte
	n    int // bytes of head collected, from next on
}

// reset starts following at off, a record boundary.
func (t *rawTail) reset(off int64) { t.next, t.n = off, 0 }

// scan takes data, appended at log offset off in a file that ends at
// fileEnd, and returns the store time of the last record it completed
// (0 if none). off is where the previous append ended.
func (t *rawTail) scan(off int64, data []byte, fileEnd int64) (storeTime int64) {
	end := off + int64(len(data))
	for t.next >= 0 && t.next < end {
		// h holds the first hn bytes of the record's head: collected in
		// t.head, or, when all of it is in data, read there in place.
		h, hn := t.head[:], t.n
		if pos := t.next - off; hn == 0 && pos >= 0 && pos+rawHeadMax <= int64(len(data)) {
			h, hn = data[pos:pos+rawHeadMax], rawHeadMax
		}
		need := 8
		if hn >= 8 {
			if _, magic, _ := message.PeekHeader(h[:8]); magic != message.MagicBlank {
				need = rawHeadForFlags
				if hn >= rawHeadForFlags {
					need = rawPosBornHost + rawBornHostV4 + 8
					if int32(binary.BigEndian.Uint32(h[rawPosSysFlag:]))&message.FlagBornHostV6 != 0 {
						need = rawPosBornHost + rawBornHostV6 + 8
					}
				}
			}
		}
		if hn < need {
			// The record at next: its first n bytes are in head, the
			// next ones in data from pos on.
			pos := int(t.next + int64(t.n) - off)
			if pos < 0 {
				t.next = -1 // bytes before data were not seen
				return storeTime
			}
			t.n += copy(t.head[t.n:need], data[pos:])
			if t.n < need {
				return storeTime // the rest of the head comes later
			}
			continue // need may grow now that more of the head is known
		}
		size, magic, _ := message.PeekHeader(h[:8])
		switch {
		case magic == message.MagicBlank:
			t.reset(fileEnd) // END_OF_FILE: the rest of the file is padding
			continue
		case magic != message.MagicV1 && magic != message.MagicV2,
			int64(size) < int64(need), t.next+int64(size) > fileEnd:
			t.next = -1 // not a record: stop following
			return storeTime
		}
		if t.next+int64(size) > end {
			t.n = copy(t.head[:], h[:need]) // whole later: keep its head
			return storeTime
		}
		storeTime = int64(binary.BigEndian.Uint64(h[need-8:]))
		t.reset(t.next + int64(size))
	}
	return storeTime
}
