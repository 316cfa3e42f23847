package store

import (
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/message"
)

// ErrDelayedBatch refuses a batch whose messages ask for a delay level, as
// RocketMQ does.
var ErrDelayedBatch = errors.New("store: delayed batch")

// PutResult says where a put was written and how durable it is.
type PutResult struct {
	Status PutStatus
	commitlog.AppendResult
}

// PutMessage stores one message (putMessage). The store stamps m with its
// store host, store time, body CRC and offsets. A refused message (bad
// topic or queue id, too large) returns an error and writes nothing.
func (s *MessageStore) PutMessage(m *message.Message) (PutResult, error) {
	res, end, status, err := s.putWritten(m)
	if err != nil {
		return PutResult{}, err
	}
	status = s.waitReplica(m, end, status)
	return PutResult{Status: status, AppendResult: res}, nil
}

// PutMessageThen is PutMessage for a caller that must not block while a
// SYNC_MASTER's slave takes the message (a connection's reading
// goroutine): when the put has to wait for the slave, PutMessageThen
// returns done false, and then is called later, from another goroutine,
// with the put's result. Otherwise (no wait, a refused or failed put) it
// returns the result with done true, and then is not called. The wait for
// a sync flush, if any, still blocks.
func (s *MessageStore) PutMessageThen(m *message.Message, then func(PutResult)) (res PutResult, done bool, err error) {
	ar, end, status, err := s.putWritten(m)
	if err != nil {
		return PutResult{}, true, err
	}
	w := s.replicaToWait(m, status)
	if w == nil {
		return PutResult{Status: status, AppendResult: ar}, true, nil
	}
	wt, ok := w.(ReplicaWaiterThen)
	if !ok {
		return PutResult{Status: w.WaitReplica(end), AppendResult: ar}, true, nil
	}
	status, done = wt.WaitReplicaThen(end, func(st PutStatus) { then(PutResult{Status: st, AppendResult: ar}) })
	return PutResult{Status: status, AppendResult: ar}, done, nil
}

// putWritten is PutMessage up to the wait for a slave: the message
// written, flushed as the flush mode asks, and dispatched; end is where it
// ends, status what its flush gave.
func (s *MessageStore) putWritten(m *message.Message) (res commitlog.AppendResult, end int64, status PutStatus, err error) {
	if err := s.checkPut(m); err != nil {
		return res, 0, 0, err
	}
	if err := s.scheduleTimer(m); err != nil {
		return res, 0, 0, err
	}
	// One pass over the properties, for the delay and for dispatch.
	var own ownRecord
	props := &own.rec.props
	props.lookup(m.Properties)
	if m.Topic != message.TopicSchedule && props.has(propDelay) &&
		s.scheduleDelay(m, props.vals[propDelay]) {
		props.lookup(m.Properties)
	}
	res, err = s.cl.Append(m)
	if err != nil {
		if s.noSpace(err) {
			return res, 0, 0, fmt.Errorf("store: put to %s: %w", m.Topic, s.flags.err())
		}
		return res, 0, 0, fmt.Errorf("store: put to %s: %w", m.Topic, err)
	}
	own.rec.offset, own.rec.size, own.end = res.WroteOffset, int32(res.WroteBytes), res.WroteOffset+int64(res.WroteBytes)
	own.rec.queueOffset, own.rec.storeTimestamp = m.QueueOffset, m.StoreTimestamp
	own.rec.queueID, own.rec.sysFlag, own.rec.topic = m.QueueID, m.SysFlag, m.Topic
	own.rec.properties = m.Properties
	status, err = s.waitFlush(m, own.end)
	if err != nil {
		return res, 0, 0, fmt.Errorf("store: put to %s: written at CommitLog offset %d, but %w", m.Topic, res.WroteOffset, err)
	}
	s.disp.afterPut(&own)
	if err := s.undispatched(m.Topic, res, own.end); err != nil {
		return res, 0, 0, err
	}
	return res, own.end, status, nil
}

// PutMessages stores msgs as consecutive records in one CommitLog file
// (putMessages of a batch). If any is refused, nothing is written.
func (s *MessageStore) PutMessages(msgs []*message.Message) (PutResult, error) {
	for _, m := range msgs {
		if err := s.checkPut(m); err != nil {
			return PutResult{}, err
		}
		if _, ok := message.LookupProperty(m.Properties, message.PropertyDelayTimeLevel); ok {
			return PutResult{}, fmt.Errorf("store: put batch to %s: a batch cannot be delayed: %w", m.Topic, ErrDelayedBatch)
		}
	}
	res, err := s.cl.AppendBatch(msgs)
	if err != nil {
		if s.noSpace(err) {
			return PutResult{}, fmt.Errorf("store: put batch to %s: %w", msgs[0].Topic, s.flags.err())
		}
		return PutResult{}, fmt.Errorf("store: put batch: %w", err)
	}
	end := res.WroteOffset + int64(res.WroteBytes)
	status, err := s.waitFlush(msgs[0], end)
	if err != nil {
		return PutResult{}, fmt.Errorf("store: put batch to %s: written at CommitLog offset %d, but %w", msgs[0].Topic, res.WroteOffset, err)
	}
	s.disp.afterPut(nil)
	if err := s.undispatched(msgs[0].Topic, res, end); err != nil {
		return PutResult{}, err
	}
	status = s.waitReplica(msgs[0], end, status)
	return PutResult{Status: status, AppendResult: res}, nil
}

// undispatched is the error of a put written up to end that dispatch has
// stopped before: it would be acknowledged and never delivered (see
// dispatcher). The record stays in the CommitLog and is dispatched once
// dispatch resumes, so a producer that retries may store it twice, as
// RocketMQ's at-least-once sends allow; nil when the put may return.
func (s *MessageStore) undispatched(topic string, res commitlog.AppendResult, end int64) error {
	if s.disp.from.Load() >= end || !s.flags.has(dispatchStopped) {
		return nil
	}
	return fmt.Errorf("store: put to %s: written at CommitLog offset %d but not dispatched: %w",
		topic, res.WroteOffset, s.flags.err())
}

func (s *MessageStore) checkPut(m *message.Message) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.opts.Replica {
		return fmt.Errorf("store: put to %s: %w", m.Topic, ErrReplica)
	}
	if err := s.flags.err(); err != nil {
		return fmt.Errorf("store: put to %s: %w", m.Topic, err)
	}
	if err := message.ValidateTopic(m.Topic); err != nil {
		return fmt.Errorf("store: put: %w", err)
	}
	if m.QueueID < 0 {
		return fmt.Errorf("store: put to %s: queue id %d: %w", m.Topic, m.QueueID, ErrBadQueueID)
	}
	return nil
}
