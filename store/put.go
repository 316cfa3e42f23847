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
	if err := s.checkPut(m); err != nil {
		return PutResult{}, err
	}
	// One pass over the properties, for the delay and for dispatch.
	var own ownRecord
	props := &own.rec.props
	props.lookup(m.Properties)
	if m.Topic != message.TopicSchedule && props.has(propDelay) &&
		s.scheduleDelay(m, props.vals[propDelay]) {
		props.lookup(m.Properties)
	}
	res, err := s.cl.Append(m)
	if err != nil {
		return PutResult{}, fmt.Errorf("store: put to %s: %w", m.Topic, err)
	}
	own.rec.offset, own.rec.size, own.end = res.WroteOffset, int32(res.WroteBytes), res.WroteOffset+int64(res.WroteBytes)
	own.rec.queueOffset, own.rec.storeTimestamp = m.QueueOffset, m.StoreTimestamp
	own.rec.queueID, own.rec.sysFlag, own.rec.topic = m.QueueID, m.SysFlag, m.Topic
	status := s.waitFlush(m, own.end)
	s.dispatchAfterPut(&own)
	return PutResult{Status: status, AppendResult: res}, nil
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
		return PutResult{}, fmt.Errorf("store: put batch: %w", err)
	}
	status := s.waitFlush(msgs[0], res.WroteOffset+int64(res.WroteBytes))
	s.dispatchAfterPut(nil)
	return PutResult{Status: status, AppendResult: res}, nil
}

func (s *MessageStore) checkPut(m *message.Message) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.diskFull.Load() {
		return fmt.Errorf("store: put to %s: the disk is over %d%% full; free space or lower retention: %w",
			m.Topic, s.opts.DiskSpaceWarningLevelRatio, ErrDiskFull)
	}
	if err := message.ValidateTopic(m.Topic); err != nil {
		return fmt.Errorf("store: put: %w", err)
	}
	if m.QueueID < 0 {
		return fmt.Errorf("store: put to %s: queue id %d: %w", m.Topic, m.QueueID, ErrBadQueueID)
	}
	return nil
}
