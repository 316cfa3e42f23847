package consumequeue

import (
	"fmt"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// The tail of a queue holds units Put appended to a file that is not
// mapped (a queue used once in a while, under a map budget), not yet
// written to the file: a put then costs a copy, not a pwrite (an open, a
// write that may wait for the filesystem's journal, a close: tens of µs on
// a loaded VM, against a put of 2.5 µs). Readers read the tail as if it
// were in the file. It is written out, one pwrite for all its units, by
// the flusher (Table.Flush), by Put once it holds tailMax bytes, reaches
// the end of its file or the file becomes worth mapping, and before
// Truncate and Close. Disk for it is reserved when each unit is appended,
// so a full disk still fails the Put. A crash loses what the tail held as
// it loses unflushed pages: recovery dispatches those records again.

// tailMax bounds a tail: 32 units, one pwrite for each 32 puts at most.
const tailMax = 32 * UnitSize

// appendTail appends u, at queue offset next, to the tail of f. Writer
// only.
func (q *Queue) appendTail(f *mappedfile.File, next int64, u Unit) error {
	q.tailMu.Lock()
	defer q.tailMu.Unlock()
	if len(q.tail) > 0 && q.tailFile != f {
		return fmt.Errorf("consumequeue: %s/%d: units of %s not written before %s", q.topic, q.queueID,
			q.tailFile.Path(), f.Path())
	}
	pos := f.WrotePosition() + len(q.tail)
	if pos+UnitSize > f.Size() || f.From()+int64(pos) != next*UnitSize {
		return fmt.Errorf("consumequeue: %s/%d: file %s does not end at unit %d", q.topic, q.queueID, f.Path(), next)
	}
	if err := f.Reserve(pos + UnitSize); err != nil {
		return fmt.Errorf("consumequeue: %s/%d: %w", q.topic, q.queueID, err)
	}
	var b [UnitSize]byte
	encodeUnit(b[:], u)
	q.tail = append(q.tail, b[:]...)
	q.tailFile = f
	q.tailN.Store(int64(len(q.tail)))
	if len(q.tail) >= tailMax || pos+UnitSize == f.Size() {
		// Best effort: on failure the units stay in the tail, readable,
		// and the next Put or flush tries again.
		if err := q.writeTailLocked(); err != nil {
			q.log.Warn("writing consume queue units failed; kept in memory to try again", "err", err)
		}
	}
	return nil
}

// tailFull reports whether the tail reaches the end of its file: it must
// be written out before the queue takes its next file. Writer only.
func (q *Queue) tailFull() bool {
	if q.tailN.Load() == 0 {
		return false
	}
	q.tailMu.RLock()
	defer q.tailMu.RUnlock()
	return q.tailFile.WrotePosition()+len(q.tail) == q.tailFile.Size()
}

// writeTail writes the tail's units to their file.
func (q *Queue) writeTail() error {
	if q.tailN.Load() == 0 {
		return nil
	}
	q.tailMu.Lock()
	defer q.tailMu.Unlock()
	return q.writeTailLocked()
}

func (q *Queue) writeTailLocked() error {
	if len(q.tail) == 0 {
		return nil
	}
	f := q.tailFile
	if err := f.WriteAt(q.tail, f.WrotePosition()); err != nil {
		return fmt.Errorf("consumequeue: %s/%d: write %d units: %w", q.topic, q.queueID, len(q.tail)/UnitSize, err)
	}
	// The writer appends to the file itself only while the tail is empty,
	// and only the holder of tailMu empties it: no other Advance runs now.
	f.Advance(len(q.tail))
	q.tail = q.tail[:0]
	if cap(q.tail) > tailMax {
		q.tail = nil
	}
	q.tailN.Store(0)
	return nil
}

// readTail copies into dst the units of the tail from pos in f, and
// reports how many; retry says the units at pos went into the file
// meanwhile (read them there).
func (q *Queue) readTail(f *mappedfile.File, pos int, dst []Unit) (n int, retry bool) {
	if q.tailN.Load() > 0 {
		q.tailMu.RLock()
		if start := f.WrotePosition(); q.tailFile == f && pos >= start {
			i := pos - start
			n = max(min(len(dst), (len(q.tail)-i)/UnitSize), 0)
			for j := range n {
				dst[j] = decodeUnit(q.tail[i+j*UnitSize:])
			}
		}
		q.tailMu.RUnlock()
	}
	return n, n == 0 && f.ReadPosition() > pos
}
