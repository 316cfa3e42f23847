package store

import (
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/indexfile"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/recovery"
)

// recover brings the CommitLog, ConsumeQueues and index into one consistent
// state before the store is used (DefaultMessageStore.recover). After a
// clean shutdown it checks the CommitLog from the file where the
// ConsumeQueues end (recoverNormally); after a crash, from the newest file
// older than the checkpoint allows (recoverAbnormally), and dispatches every
// record from there again: ConsumeQueue and index writes skip what they
// already hold.
func (s *MessageStore) recover(crashed bool) error {
	files := s.cl.Files()
	cp := s.checkpoint.Values()
	if s.cqs.RebuildFrom() >= 0 {
		if err := s.rebuildOnNextOpen(); err != nil {
			return err
		}
	}
	from := int64(0)
	if len(files) > 0 {
		from = files[0].From()
		if crashed {
			from = s.abnormalStart(files, cp)
		} else if cqMax := s.cqs.MaxPhysicOffset(); cqMax >= 0 {
			for i := len(files) - 1; i >= 0; i-- {
				if files[i].From() <= cqMax {
					from = files[i].From()
					break
				}
			}
		}
	}
	s.log.Info("recovering the commit log", "crashed", crashed, "from", from)
	// After a crash, the ConsumeQueue units of the records stored up to the
	// checkpoint's minimum timestamp are durable: the first record after it
	// is where they may have holes (kept apart from from, which is only
	// where checking starts, a whole file before).
	kept, found := from, false
	var visit func(message.Record, int64) error
	if crashed {
		minTs := cp.MinTimestamp()
		visit = func(r message.Record, off int64) error {
			if !found && r.StoreTimestamp() > minTs {
				kept, found = off, true
			}
			return nil
		}
	}
	durable := commitlog.Durable{All: !crashed, Before: cp.PhysicMsgTimestamp}
	end, err := s.cl.Recover(from, durable, visit)
	if err != nil {
		return err
	}
	if crashed && !found {
		kept = end
	}
	if ts := s.cl.LastStoreTimestamp(); ts > 0 && ts < durable.Before {
		// The checkpoint names a record no longer in the log (a repair
		// moved it aside): recovery must not take the end of what is kept
		// for flushed data lost, now or at the next start.
		durable.Before = ts
		s.checkpoint.Update(func(v *recovery.CheckpointValues) { v.PhysicMsgTimestamp = ts })
	}
	if len(files) == 0 {
		for _, q := range s.cqs.All() { // no CommitLog: no queue can point anywhere
			if err := s.cqs.Remove(q.Topic()); err != nil {
				return err
			}
		}
	}
	// After a crash, units past kept may have holes (pages never flushed):
	// drop them all and dispatch again. The checkpoint says units before it
	// were flushed whole.
	cut := end
	if crashed {
		cut = kept
	}
	if err := s.cqs.Truncate(cut); err != nil {
		return fmt.Errorf("truncate consume queues at %d: %w", cut, err)
	}
	minOff := max(s.cl.MinOffset(), 0)
	reputFrom := max(s.cqs.MaxPhysicOffset(), minOff)
	if r := s.cqs.RebuildFrom(); r >= 0 {
		// A queue was cut at a bad unit with units after it: put them again
		// from the CommitLog rather than lose them (the other queues skip
		// what they hold).
		reputFrom = min(reputFrom, max(r, minOff))
	}
	if crashed {
		reputFrom = min(reputFrom, kept)
	}
	if err := s.recoverIndex(crashed, cp, end); err != nil {
		return err
	}
	if s.index != nil {
		// The index may be behind the queues (files dropped or deleted):
		// index again from its last record, or from the start when it
		// holds nothing (no file, or none with an entry: its offset 0
		// is then no record's).
		if ts, indexed := s.index.LastUpdate(); ts == 0 {
			reputFrom = min(reputFrom, minOff)
		} else if !s.covers(indexed, reputFrom) {
			reputFrom = min(reputFrom, max(indexed, minOff))
		}
	}
	if reputFrom < from {
		// Dispatch starts before the part of the CommitLog checked above:
		// check from there, so that a damaged record is refused (or
		// repaired) rather than dispatched.
		if end, err = s.cl.Recover(reputFrom, durable, nil); err != nil {
			return err
		}
		if err := s.cqs.Truncate(end); err != nil {
			return fmt.Errorf("truncate consume queues at %d: %w", end, err)
		}
		if err := s.recoverIndex(false, cp, end); err != nil {
			return err
		}
	}
	reputFrom = min(reputFrom, end)
	s.log.Info("dispatching the commit log again", "from", reputFrom, "to", end)
	// Dispatch now, so the ConsumeQueues are whole before the queue offsets
	// are taken from them.
	s.disp.from.Store(reputFrom)
	s.disp.catchUp()
	if r := s.cqs.RebuildFrom(); r >= 0 && s.disp.from.Load() < end && r < s.disp.from.Load() {
		// A queue opened on first use (a clean shutdown's summary) was
		// found damaged by dispatch: build it again from where it was cut.
		if err := s.rebuildOnNextOpen(); err != nil {
			return err
		}
		s.disp.from.Store(max(r, minOff))
		s.disp.catchUp()
	}
	if s.disp.from.Load() < end {
		return fmt.Errorf("dispatch stopped at %d before the end of the commit log at %d", s.disp.from.Load(), end)
	}
	s.cqs.EachMaxOffset(s.cl.SetQueueOffset)
	s.cqs.CorrectMinOffset(minOff)
	return nil
}

// recoverIndex brings the index files into step with a CommitLog that
// ends at end. After a crash it first returns them to the state the
// checkpoint's index mark names (the newest file rolled back to it, later
// files deleted; see indexfile.Mark), or, with no mark (a checkpoint
// RocketMQ wrote), deletes the files written after indexMsgTimestamp as
// RocketMQ does. Then it forgets the entries of records past end (lost
// with a torn tail or moved aside by a repair), which Put would otherwise
// take for indexed already when new records take their offsets.
func (s *MessageStore) recoverIndex(crashed bool, cp recovery.CheckpointValues, end int64) error {
	if s.index == nil {
		return nil
	}
	if crashed {
		var err error
		if m := cp.IndexMark; m.File > 0 {
			err = s.index.RollBack(indexfile.Mark{File: fmt.Sprintf("%017d", m.File), IndexCount: m.IndexCount,
				EndPhyOffset: m.EndPhyOffset, EndTimestamp: m.EndTimestamp})
		} else {
			err = s.index.DropAfter(cp.IndexMsgTimestamp)
		}
		if err != nil {
			return err
		}
	}
	return s.index.CutAt(end)
}

// markIndex flushes the index files and records in the checkpoint (in
// memory: the caller flushes it) the state of the newest one they hold,
// both as RocketMQ's indexMsgTimestamp and as our index mark: after a
// crash, recovery keeps the index up to there and indexes again only what
// came after. It runs in the background (the queue flusher) and at Close,
// never on a put's path: Put waits for no index flush.
func (s *MessageStore) markIndex() error {
	m, err := s.index.FlushMark()
	if err != nil || m.File == "" {
		return err
	}
	file, err := strconv.ParseInt(m.File, 10, 64)
	if err != nil {
		return fmt.Errorf("index file name %q: %w", m.File, err)
	}
	s.checkpoint.Update(func(v *recovery.CheckpointValues) {
		v.IndexMsgTimestamp = max(v.IndexMsgTimestamp, m.EndTimestamp)
		v.IndexMark = recovery.IndexMark{File: file, IndexCount: m.IndexCount,
			EndPhyOffset: m.EndPhyOffset, EndTimestamp: m.EndTimestamp}
	})
	return nil
}

// rebuildOnNextOpen makes sure that the ConsumeQueue units opening cut
// off (Table.RebuildFrom) are rebuilt even if this open fails or the
// process dies before dispatch has put them again: it leaves the abort
// marker and a checkpoint that sends the next recovery back to the first
// CommitLog file, as if the queues had been lost. A clean Close restores
// both.
func (s *MessageStore) rebuildOnNextOpen() error {
	s.checkpoint.Update(func(v *recovery.CheckpointValues) { v.LogicsMsgTimestamp = 0 })
	if err := s.checkpoint.Flush(); err != nil {
		return err
	}
	return s.abort.Create()
}

// abnormalStart is the start of the newest CommitLog file whose first
// record was stored before the checkpoint's minimum timestamp; the first
// file if none was.
func (s *MessageStore) abnormalStart(files []*mappedfile.File, cp recovery.CheckpointValues) int64 {
	minTs := cp.MinTimestamp()
	for i := len(files) - 1; i >= 0; i-- {
		r, sl, err := s.cl.ReadRecord(files[i].From())
		if err != nil {
			continue
		}
		ts := r.StoreTimestamp()
		sl.Release()
		if ts != 0 && ts <= minTs {
			return files[i].From()
		}
	}
	return files[0].From()
}

// covers reports whether the record at offset ends at or after to.
func (s *MessageStore) covers(offset, to int64) bool {
	r, sl, err := s.cl.ReadRecord(offset)
	if err != nil {
		return false
	}
	defer sl.Release()
	return offset+int64(len(r)) >= to
}
