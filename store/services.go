package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/flush"
	"github.com/rocketstore/rocketstore/indexfile"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/recovery"
)

// services are the store's background flushers (see package flush).
type services struct {
	group   *flush.GroupCommit // SyncFlush only
	flushCL *flush.Periodic    // AsyncFlush only
	commit  *flush.Periodic    // TransientStorePool only
	flushCQ *flush.Periodic    // ConsumeQueues and the checkpoint
}

// RocketMQ's flush and commit defaults.
const (
	flushCommitLogInterval    = 500 * time.Millisecond
	flushCommitLogThorough    = 10 * time.Second
	flushCommitLogLeastPages  = 4
	commitCommitLogInterval   = 200 * time.Millisecond
	commitCommitLogThorough   = 200 * time.Millisecond
	commitCommitLogLeastPages = 4
	flushQueueInterval        = time.Second
	flushQueueThorough        = 60 * time.Second
	flushQueueLeastPages      = 2
)

func (s *MessageStore) startServices() {
	if s.opts.TransientStorePool {
		s.services.commit = flush.StartPeriodic(func(pages int) error {
			s.cl.Commit(pages)
			s.disp.wakeUp() // committed bytes are now readable
			return nil
		}, flush.PeriodicOptions{Name: "commit log commit", Interval: commitCommitLogInterval,
			Thorough: commitCommitLogThorough, LeastPages: commitCommitLogLeastPages, Logger: s.log})
	}
	if s.opts.FlushDiskType == SyncFlush {
		s.services.group = flush.NewGroupCommit(s.flushCommitLog, s.opts.SyncFlushTimeout, s.log)
	} else {
		s.services.flushCL = flush.StartPeriodic(func(pages int) error {
			s.flushCommitLog(pages) // a failure is logged once, by runningFlags
			return nil
		}, flush.PeriodicOptions{Name: "commit log flush", Interval: flushCommitLogInterval,
			Thorough: flushCommitLogThorough, LeastPages: flushCommitLogLeastPages, Logger: s.log})
	}
	s.services.flushCQ = flush.StartPeriodic(s.flushQueues, flush.PeriodicOptions{Name: "consume queue flush",
		Interval: flushQueueInterval, Thorough: flushQueueThorough, LeastPages: flushQueueLeastPages, Logger: s.log})
}

// flushCommitLog flushes the CommitLog and, when it flushed everything
// written, records the store time of the last record in the checkpoint.
//
// A failed flush is final (ErrFlushFailed): the kernel may have dropped the
// dirty pages it could not write and reports the failure only once, so a
// later flush that succeeds proves nothing (PostgreSQL's fsync lesson).
// The store refuses puts from then on and flushes no more until reopened;
// the next Open recovers from what is on disk.
func (s *MessageStore) flushCommitLog(pages int) (int64, error) {
	if err := s.flags.cause(flushFailed); err != nil {
		return s.cl.FlushedOffset(), err
	}
	ts, end, from := s.cl.LastStoreTimestamp(), s.cl.MaxOffset(), s.cl.FlushedOffset()
	start := time.Now()
	off, err := s.cl.Flush(pages)
	if off > from {
		s.flushLatency.Observe(time.Since(start))
	}
	if err != nil {
		err = fmt.Errorf("a write to disk failed (flush of the commit log at offset %d): %w: %w; "+
			"what was not flushed may be lost: fix the disk and reopen the store", off, ErrFlushFailed, err)
		s.flags.set(flushFailed, err)
		return s.cl.FlushedOffset(), err
	}
	if off >= end && ts > 0 {
		s.checkpoint.Update(func(v *recovery.CheckpointValues) { v.PhysicMsgTimestamp = ts })
	}
	return off, nil
}

// flushQueues flushes the ConsumeQueues; a thorough flush also moves the
// checkpoint's logics timestamp. It flushes the index files and marks how
// far they are in the checkpoint (markIndex), then writes the checkpoint,
// every time.
func (s *MessageStore) flushQueues(pages int) error {
	ts := s.disp.lastTime.Load()
	err := s.cqs.Flush(pages)
	if err == nil && pages == 0 && ts > 0 {
		s.checkpoint.Update(func(v *recovery.CheckpointValues) { v.LogicsMsgTimestamp = ts })
	}
	if s.index != nil {
		if ierr := s.markIndex(); ierr != nil && !errors.Is(ierr, indexfile.ErrClosed) {
			err = errors.Join(err, fmt.Errorf("flush the index: %w", ierr))
		}
	}
	return errors.Join(err, s.checkpoint.Flush())
}

// waitFlush waits, under SyncFlush, until the put that ended at end is
// durable, unless the message asked not to wait (WAIT=false). A flush that
// does not finish in time gives FlushDiskTimeout; one that fails gives its
// error (ErrFlushFailed), logged once by runningFlags.
func (s *MessageStore) waitFlush(m *message.Message, end int64) (PutStatus, error) {
	if s.services.group == nil {
		return PutOK, nil
	}
	if v, ok := message.LookupProperty(m.Properties, message.PropertyWaitStoreMsgOK); ok && v == "false" {
		return PutOK, nil
	}
	switch err := s.services.group.Wait(end); {
	case err == nil:
		return PutOK, nil
	case errors.Is(err, ErrFlushFailed):
		return PutOK, err
	default: // timed out, or closing
		return FlushDiskTimeout, nil
	}
}

// close stops every service, each after a last run.
func (ss *services) close() error {
	var err error
	if ss.commit != nil {
		err = errors.Join(err, ss.commit.Close())
	}
	if ss.group != nil {
		ss.group.Close()
	}
	if ss.flushCL != nil {
		err = errors.Join(err, ss.flushCL.Close())
	}
	if ss.flushCQ != nil {
		err = errors.Join(err, ss.flushCQ.Close())
	}
	return err
}

// Syncs is how many sync flushes the store has made (SyncFlush only).
func (s *MessageStore) Syncs() int64 {
	if s.services.group == nil {
		return 0
	}
	return s.services.group.Syncs()
}
