package consumequeue

import (
	"fmt"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// search returns the first index in [lo, hi) for which pred is true, or hi
// when there is none; pred must be false up to some index and true after it.
func search(lo, hi int64, pred func(int64) bool) int64 {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if pred(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Truncate drops every unit whose CommitLog offset is at or after phyOffset
// (truncateDirtyLogicFiles), as recovery does once it knows where the
// CommitLog's valid data ends. Files after the cut are deleted; the file
// holding the cut keeps its earlier units and is zeroed from there. When the
// cut falls exactly on the start of a file, that file stays, empty, so the
// queue keeps its MaxOffset (RocketMQ deletes it and, if it was the only
// file, restarts the queue at index 0). MaxPhysicOffset becomes the end of
// the last unit kept (-1 if none; RocketMQ then keeps phyOffset).
// Only call it while no Put runs.
func (q *Queue) Truncate(phyOffset int64) error {
	if q.closed.Load() {
		return ErrClosed
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.writeTail(); err != nil {
		return err
	}
	first := q.files.First()
	if first == nil {
		return nil
	}
	hi := q.max.Load()
	cut := search(first.From()/UnitSize, hi, func(i int64) bool {
		// Units of records before phyOffset come first and are whole; after
		// a crash, units past them may be zero or torn: cut at either.
		u, ok := q.unitAt(i)
		return !ok || !u.valid() || u.Offset >= phyOffset
	})
	if cut == hi {
		return nil
	}
	q.max.Store(cut)
	if q.min.Load() >= cut {
		q.min.Store(cut)
		q.headPhys.Store(-1) // no unit at min until the next Put
	}
	err := q.files.Truncate(cut * UnitSize)
	q.cur = q.files.Last()
	q.maxPhys.Store(q.lastRealEnd())
	q.log.Info("truncated consume queue", "phyOffset", phyOffset, "maxOffset", cut, "dropped", hi-cut)
	if err != nil {
		return fmt.Errorf("consumequeue: truncate %s/%d at unit %d: %w", q.topic, q.queueID, cut, err)
	}
	return nil
}

// DeleteExpired deletes files from the head of the queue, never the last
// one, whose last unit points below minPhyOffset, the CommitLog's new min
// offset (deleteExpiredFile), and then corrects MinOffset with
// CorrectMinOffset. It returns how many files it deleted. Only the cleaner
// calls it; Put and readers may run at the same time.
func (q *Queue) DeleteExpired(minPhyOffset int64) (int, error) {
	if q.closed.Load() {
		return 0, ErrClosed
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	n, err := q.files.DeleteHead(func(f *mappedfile.File) bool {
		var b [UnitSize]byte
		if n, err := f.ReadAt(b[:], f.Size()-UnitSize); err != nil || n < UnitSize {
			return false
		}
		return decodeUnit(b[:]).Offset < minPhyOffset
	}, 0)
	q.correctMinOffsetLocked(minPhyOffset) // also moves MinOffset into the first file
	if err != nil {
		return n, fmt.Errorf("consumequeue: delete expired files of %s/%d: %w", q.topic, q.queueID, err)
	}
	return n, nil
}

// CorrectMinOffset moves MinOffset to the first unit whose CommitLog offset
// is at least minPhyOffset (correctMinOffset): to MaxOffset when even the
// last unit points below it, else by binary search from the current
// MinOffset. MinOffset never moves back.
func (q *Queue) CorrectMinOffset(minPhyOffset int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.correctMinOffsetLocked(minPhyOffset)
}

func (q *Queue) correctMinOffsetLocked(minPhyOffset int64) {
	lo, hi := q.min.Load(), q.max.Load()
	if lo >= hi {
		return
	}
	if head := q.headPhys.Load(); head >= minPhyOffset {
		return // the queue's first unit is still in the CommitLog: nothing to read
	}
	last, ok := q.unitAt(hi - 1)
	if !ok {
		return
	}
	old := lo
	if last.Offset < minPhyOffset {
		lo = hi // no valid unit: point at the next one to come
	} else {
		if first := q.files.First(); first != nil {
			lo = max(lo, first.From()/UnitSize)
		}
		// The last unit qualifies, so the search ends at hi-1 at the latest.
		// A unit that cannot be read stops the search: better a MinOffset too
		// low (readers get ErrOffsetTooSmall) than one past readable data.
		lo = search(lo, hi-1, func(i int64) bool {
			u, ok := q.unitAt(i)
			return !ok || u.Offset >= minPhyOffset
		})
	}
	q.headPhys.Store(-1)
	if u, ok := q.unitAt(lo); ok && lo < hi {
		q.headPhys.Store(u.Offset)
	}
	if lo > old {
		q.min.Store(lo)
		q.log.Info("corrected consume queue min offset", "minOffset", lo, "minPhyOffset", minPhyOffset)
	}
}

// OffsetByTime returns the index of the first unit in [MinOffset, MaxOffset)
// whose message was stored at or after ts (ms), or MaxOffset when there is
// none: MinOffset for a ts before the first message, MaxOffset for one after
// the last. This is RocketMQ 5's getOffsetInQueueByTime with
// BoundaryType.LOWER, searched over the whole queue instead of one file
// chosen by file times. storeTime returns the STORETIMESTAMP of the record
// at phyOffset; a unit it cannot answer for (ok false: e.g. its CommitLog
// file is gone) counts as stored before ts, where RocketMQ returns 0.
// Store times are assumed to grow with the index, as they do in one queue.
func (q *Queue) OffsetByTime(ts int64, storeTime func(phyOffset int64, size int32) (int64, bool)) int64 {
	return search(q.min.Load(), q.max.Load(), func(i int64) bool {
		u, ok := q.unitAt(i)
		if !ok {
			return false
		}
		t, ok := storeTime(u.Offset, u.Size)
		return ok && t >= ts
	})
}
