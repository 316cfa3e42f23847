package store

import (
	"errors"
	"time"

	"github.com/rocketstore/rocketstore/flush"
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
			s.wakeReput() // committed bytes are now readable
			return nil
		}, flush.PeriodicOptions{Name: "commit log commit", Interval: commitCommitLogInterval,
			Thorough: commitCommitLogThorough, LeastPages: commitCommitLogLeastPages, Logger: s.log})
	}
	if s.opts.FlushDiskType == SyncFlush {
		s.services.group = flush.NewGroupCommit(s.flushCommitLog, s.opts.SyncFlushTimeout, s.log)
	} else {
		s.services.flushCL = flush.StartPeriodic(func(pages int) error {
			_, err := s.flushCommitLog(pages)
			return err
		}, flush.PeriodicOptions{Name: "commit log flush", Interval: flushCommitLogInterval,
			Thorough: flushCommitLogThorough, LeastPages: flushCommitLogLeastPages, Logger: s.log})
	}
	s.services.flushCQ = flush.StartPeriodic(s.flushQueues, flush.PeriodicOptions{Name: "consume queue flush",
		Interval: flushQueueInterval, Thorough: flushQueueThorough, LeastPages: flushQueueLeastPages, Logger: s.log})
}

// flushCommitLog flushes the CommitLog and, when it flushed everything
// written, records the store time of the last record in the checkpoint.
func (s *MessageStore) flushCommitLog(pages int) (int64, error) {
	ts, end, from := s.cl.LastStoreTimestamp(), s.cl.MaxOffset(), s.cl.FlushedOffset()
	start := time.Now()
	off, err := s.cl.Flush(pages)
	if off > from {
		s.flushLatency.Observe(time.Since(start))
	}
	if err == nil && off >= end && ts > 0 {
		s.checkpoint.Update(func(v *recovery.CheckpointValues) { v.PhysicMsgTimestamp = ts })
	}
	return off, err
}

// flushQueues flushes the ConsumeQueues; a thorough flush also moves the
// checkpoint's logics timestamp. The checkpoint is written every time.
func (s *MessageStore) flushQueues(pages int) error {
	ts := s.lastDispatchedTime.Load()
	err := s.cqs.Flush(pages)
	if err == nil && pages == 0 && ts > 0 {
		s.checkpoint.Update(func(v *recovery.CheckpointValues) { v.LogicsMsgTimestamp = ts })
	}
	return errors.Join(err, s.checkpoint.Flush())
}

// waitFlush waits, under SyncFlush, until the put that ended at end is
// durable, unless the message asked not to wait (WAIT=false).
func (s *MessageStore) waitFlush(m *message.Message, end int64) PutStatus {
	if s.services.group == nil {
		return PutOK
	}
	if v, ok := message.LookupProperty(m.Properties, message.PropertyWaitStoreMsgOK); ok && v == "false" {
		return PutOK
	}
	if err := s.services.group.Wait(end); err != nil {
		if !errors.Is(err, flush.ErrTimeout) {
			s.log.Error("sync flush failed", "err", err)
		}
		return FlushDiskTimeout
	}
	return PutOK
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
