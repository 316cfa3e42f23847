package store

import (
	"strconv"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/timer"
)

// recover brings the wheel in line with the timer log and finds where
// enqueue and delivery resume (TimerMessageStore.recover):
//
//   - the log is read from one file before the checkpoint's flush
//     position to its last whole unit, and cut there; every unit of a slot
//     not yet delivered is linked from its slot (a crash may have come
//     between writing a unit and its slot);
//   - a slot whose chain starts past the log's end (the log lost its tail
//     in a power loss, the wheel did not) is rebuilt from the log;
//   - enqueue resumes after the timer queue offset of the last unit's
//     message, or the checkpoint's offset if that is later;
//   - delivery resumes at the checkpoint's read time; the deliveries found
//     in the CommitLog after its DeliverFromOffset are not made again;
//   - new files get their checkpoint at once, before any unit.
func (t *timerService) recover(cp timer.CheckpointValues) error {
	now := t.s.nowMs()
	fileSize := int64(t.log.FileSize())
	fresh := cp == (timer.CheckpointValues{}) && len(t.log.Files()) == 0
	t.readTime = cp.LastReadTimeMs / t.prec * t.prec
	if oldest := t.format(now) - timer.SlotsTotal*t.prec + timerBlankSlots*t.prec; fresh {
		// Files made after Open (the first timer message) read from the
		// time the store opened, as files made at Open would have.
		t.readTime = t.format(min(now, t.s.timerFrom))
	} else if t.readTime < oldest {
		t.s.log.Warn("timer read time is older than the wheel holds; slots before are lost", "readTime", t.readTime, "from", oldest)
		t.readTime = oldest
	}
	t.writeTime = max(t.format(now), t.readTime)
	var last *timer.Unit
	end, err := t.log.Recover(max(cp.LastTimerLogFlushPos-fileSize, 0), func(pos int64, u timer.Unit) {
		t.revise(pos, u)
		last = &u
	})
	if err != nil {
		return err
	}
	if crashed := t.s.abort.Exists(); crashed {
		if err := t.rebuildBroken(end); err != nil {
			return err
		}
	}
	t.queueOffset = cp.LastTimerQueueOffset
	if last != nil {
		if r, sl, err := t.s.cl.ReadRecord(last.CommitLogOffset); err == nil {
			if string(r.Topic()) == message.TopicTimer {
				t.queueOffset = max(t.queueOffset, r.QueueOffset()+1)
			}
			sl.Release()
		}
	}
	if q := t.s.cqs.Get(message.TopicTimer, 0); q != nil && t.queueOffset < q.MinOffset() {
		t.queueOffset = q.MinOffset()
	}
	t.committed = readMark{readTime: t.readTime, deliverFrom: cp.DeliverFromOffset}
	if !cp.DeliverFromKnown {
		t.committed.deliverFrom = t.s.cl.MaxOffset()
	}
	t.candidate = t.committed
	if cp.DeliverFromKnown {
		t.recoverSkips(cp.DeliverFromOffset, now)
	}
	t.readTimeSnapshot.Store(t.readTime)
	if fresh {
		// Durable before the first unit is written: a crash after the log's
		// first file is made would otherwise find an empty checkpoint and
		// read from a week back (the oldest slot the wheel holds).
		if err := t.writeCheckpoint(); err != nil {
			return err
		}
	}
	t.s.log.Info("timer recovered", "readTime", t.readTime, "queueOffset", t.queueOffset, "logEnd", end,
		"skips", len(t.skip))
	return nil
}

// revise links the unit at pos from its slot if the slot is still to be
// delivered and does not reach it yet (reviseSlot).
func (t *timerService) revise(pos int64, u timer.Unit) {
	d := t.format(u.DelayedTimeMs())
	if d < t.readTime {
		return
	}
	slot := t.wheel.Raw(d)
	switch {
	case slot.TimeMs != d:
		t.wheel.Put(timer.Slot{TimeMs: d, FirstPos: pos, LastPos: pos, Num: 1})
	case slot.LastPos < pos:
		slot.LastPos, slot.Num = pos, slot.Num+1
		if slot.FirstPos < 0 {
			slot.FirstPos = pos
		}
		t.wheel.Put(slot)
	}
}

// rebuildBroken empties every pending slot whose chain starts at or past
// the log's end and links its units again from the log.
func (t *timerService) rebuildBroken(end int64) error {
	minFirst := int64(-1)
	for i := int64(0); i < 2*timer.SlotsTotal; i++ {
		at := t.readTime + i*t.prec
		s := t.wheel.Slot(at)
		if s.Empty() || s.LastPos < end {
			continue
		}
		t.s.log.Warn("timer slot points past the end of the timer log; rebuilding it", "slot", at, "lastPos", s.LastPos, "end", end)
		t.wheel.Clear(at)
		if minFirst < 0 || s.FirstPos < minFirst {
			minFirst = max(s.FirstPos, 0)
		}
	}
	if minFirst < 0 {
		return nil
	}
	for _, from := range t.log.Files() {
		if from+int64(t.log.FileSize()) <= minFirst {
			continue
		}
		if err := t.log.Units(from, func(pos int64, u timer.Unit) bool {
			if pos >= minFirst {
				t.revise(pos, u)
			}
			return true
		}); err != nil {
			return err
		}
	}
	return nil
}

// recoverSkips collects the deliveries written to the CommitLog from
// offset from on: those of the slots delivery resumes at, made before a
// crash. They are skipped until delivery passes the time of the crash.
func (t *timerService) recoverSkips(from, now int64) {
	cl := t.s.cl
	if from >= cl.MaxOffset() {
		return
	}
	it := cl.Iterate(max(from, cl.MinOffset()), false)
	defer it.Close()
	names := []string{message.PropertyTimerDequeueMS, message.PropertyTimerEnqueueMS, message.PropertyUniqClientMessageIDKeyIndex}
	var vals [3][]byte
	for it.Next() {
		r := it.Record()
		found := message.LookupProperties(r.Properties(), names, vals[:])
		if found&3 != 3 {
			continue
		}
		enq, err := strconv.ParseInt(string(vals[1]), 10, 64)
		if err != nil {
			continue
		}
		if t.skip == nil {
			t.skip = map[string]struct{}{}
		}
		t.skip[skipKey(string(r.Topic()), string(vals[2]), enq, r.BodyCRC())] = struct{}{}
	}
	if err := it.Err(); err != nil {
		t.s.log.Warn("reading the deliveries made before the crash stopped early", "offset", it.Offset(), "err", err)
	}
	t.skipUntil = t.format(now)
}
