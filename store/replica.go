package store

import (
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// ErrReplica refuses a put to a slave's store (Options.Replica), as
// RocketMQ's store refuses puts in slave mode.
var ErrReplica = errors.New("store: a slave's store takes no puts")

// ReplicaWaiter holds a SYNC_MASTER's puts until a slave has the CommitLog
// up to their end (RocketMQ's GroupTransferService); package ha provides
// one. WaitReplica returns PutOK, FlushSlaveTimeout or SlaveNotAvailable.
type ReplicaWaiter interface {
	WaitReplica(end int64) PutStatus
}

// ReplicaWaiterThen is a ReplicaWaiter that can also answer without
// blocking (package ha's does): WaitReplicaThen returns the status and true
// when it is known at once, else false, and calls then with it later from
// another goroutine.
type ReplicaWaiterThen interface {
	ReplicaWaiter
	WaitReplicaThen(end int64, then func(PutStatus)) (PutStatus, bool)
}

// replicaWaiter boxes a ReplicaWaiter for an atomic pointer.
type replicaWaiter struct{ w ReplicaWaiter }

// SetReplicaWaiter makes every later put that waits for its store (no
// WAIT=false property) also wait on w once written, flushed as the flush
// mode asks, and dispatched; nil stops the waiting. A put that the flush
// already failed (FlushDiskTimeout) keeps that status.
func (s *MessageStore) SetReplicaWaiter(w ReplicaWaiter) {
	if w == nil {
		s.replica.Store(nil)
		return
	}
	s.replica.Store(&replicaWaiter{w})
}

// waitReplica is the replication part of a put that ended at end and got
// status from its flush.
func (s *MessageStore) waitReplica(m *message.Message, end int64, status PutStatus) PutStatus {
	if w := s.replicaToWait(m, status); w != nil {
		return w.WaitReplica(end)
	}
	return status
}

// replicaToWait is the waiter a put that got status from its flush waits
// on; nil when it waits for none.
func (s *MessageStore) replicaToWait(m *message.Message, status PutStatus) ReplicaWaiter {
	r := s.replica.Load()
	if r == nil || status != PutOK {
		return nil
	}
	if v, ok := message.LookupProperty(m.Properties, message.PropertyWaitStoreMsgOK); ok && v == "false" {
		return nil
	}
	return r.w
}

// AppendReplica writes bytes of a master's CommitLog at offset, which must
// be the end of this store's CommitLog (see commitlog.Log.AppendRaw), and
// wakes the dispatcher, which builds the ConsumeQueues and the index from
// the records as it does after recovery. A slave has one writer: nothing
// else may put to a store that takes replicated bytes.
func (s *MessageStore) AppendReplica(offset int64, data []byte) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.cl.AppendRaw(offset, data); err != nil {
		return fmt.Errorf("store: replica: %w", err)
	}
	s.disp.wakeUp()
	return nil
}

// ReplicaSpace returns the free rest of the CommitLog file that the bytes
// at offset, the end of a CommitLog that holds something already, go to:
// a slave reads the master's bytes straight into it, then publishes them
// with CommitReplica (see commitlog.Log.RawSpace). Release it when done.
func (s *MessageStore) ReplicaSpace(offset int64) (mappedfile.Space, error) {
	if s.closed.Load() {
		return mappedfile.Space{}, ErrClosed
	}
	sp, err := s.cl.RawSpace(offset)
	if err != nil {
		return mappedfile.Space{}, fmt.Errorf("store: replica: %w", err)
	}
	return sp, nil
}

// CommitReplica publishes n bytes written at offset into the space
// ReplicaSpace returned, as AppendReplica would have written them.
func (s *MessageStore) CommitReplica(offset int64, n int) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.cl.CommitRaw(offset, n); err != nil {
		return fmt.Errorf("store: replica: %w", err)
	}
	s.disp.wakeUp()
	return nil
}

// ReplicaOffset is the end of this store's CommitLog as written: where the
// next AppendReplica must start, and what a slave reports to its master.
func (s *MessageStore) ReplicaOffset() int64 { return s.cl.WriteOffset() }

// SyncReplica makes the replicated bytes durable under SyncFlush, in one
// grouped flush, before the slave acknowledges them (so a slave's ack
// means on its disk); it also lets the dispatcher, which dispatches only
// what is flushed then, go on. Under AsyncFlush it does nothing.
func (s *MessageStore) SyncReplica() error {
	if s.services.group == nil {
		return nil
	}
	end := s.cl.WriteOffset()
	if err := s.services.group.Wait(end); err != nil {
		return fmt.Errorf("store: replica: flush to %d: %w", end, err)
	}
	s.disp.wakeUp()
	return nil
}
