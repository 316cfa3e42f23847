package pop

import (
	"fmt"
	"slices"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

// Pop hands out up to r.MaxMessages messages of r.Topic to r.Group: first
// those whose invisible time ended, then new ones, from each queue in
// turn. It writes the check-point before it returns, so what it returns is
// delivered again after a crash unless acked. No message: an empty slice.
func (s *Service) Pop(r Request) ([]Delivery, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if r.MaxMessages <= 0 {
		r.MaxMessages = 1
	}
	n := int32(s.opts.QueueNums(r.Topic))
	if n <= 0 {
		return nil, nil
	}
	first, count := int32(0), n
	if r.QueueID >= 0 {
		if r.QueueID >= n {
			return nil, nil
		}
		first, count = r.QueueID, 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.rr
	s.rr++
	now := time.Now()
	var out []Delivery
	for i := int32(0); i < count && len(out) < r.MaxMessages; i++ {
		qid := first
		if count > 1 {
			qid = int32((start + uint32(i)) % uint32(count))
		}
		got, err := s.popQueue(r, queueKey{r.Group, r.Topic, qid}, now, r.MaxMessages-len(out))
		if err != nil {
			if len(out) > 0 { // those are written down: deliver them
				s.log.Warn("pop: a queue failed after others delivered", "topic", r.Topic, "queue", qid, "err", err)
				return out, nil
			}
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// popQueue pops up to want messages of one queue (s.mu held).
func (s *Service) popQueue(r Request, k queueKey, now time.Time, want int) ([]Delivery, error) {
	q := s.queue(k, true)
	nowMs := now.UnixMilli()
	var due []int64
	for o, e := range q.inflight {
		if e.visibleAt <= nowMs {
			due = append(due, o)
		} else if r.FIFO {
			return nil, nil // the queue's previous messages are not acked yet
		}
	}
	slices.Sort(due)
	var msgs []*message.Message
	var offsets []int64
	var attempts []int32
	maxAtt := s.maxAttempts(k.group)
	for _, o := range due {
		if len(msgs) >= want {
			break
		}
		e := q.inflight[o]
		m := s.read(k, o)
		if m == nil || e.attempts >= maxAtt {
			if err := s.retire(k, q, o, e, m); err != nil {
				return nil, err
			}
			continue
		}
		msgs, offsets, attempts = append(msgs, m), append(offsets, o), append(attempts, e.attempts+1)
	}
	next := q.next
	if len(msgs) < want && !(r.FIFO && len(msgs) > 0) {
		for tries := 0; tries < 4 && len(msgs) < want; tries++ {
			res := s.opts.Store.GetMessage(k.group, k.topic, k.queueID, next, want-len(msgs), r.Filter)
			for _, sl := range res.Messages {
				m, _, err := message.Decode(sl.Bytes())
				if err != nil {
					continue // a record the store served is whole; skip rather than fail the pop
				}
				msgs, offsets, attempts = append(msgs, m), append(offsets, m.QueueOffset), append(attempts, 1)
			}
			moved := res.NextBeginOffset != next && res.Status != store.NoMatchedLogicQueue && res.Status != store.NoMessageInQueue
			if moved {
				next = res.NextBeginOffset
			}
			found := res.Status == store.Found
			res.Release()
			if found || !moved {
				break
			}
		}
	}
	if len(msgs) == 0 {
		if next > q.next { // skipped by the filter: nothing to write down, the boundary moves
			q.next = next
			s.commitBoundary(k, q)
		}
		return nil, nil
	}
	// popTime may run ahead of the clock (one more per delivery in the same
	// millisecond); the invisible time counts from now.
	popTime := s.popTime(now)
	ck := &ckRecord{group: k.group, topic: k.topic, queueID: k.queueID, popTime: popTime,
		visibleAt: nowMs + r.Invisible.Milliseconds(), offsets: offsets, attempts: attempts}
	if err := s.putRecord(tagCK, ck.encode()); err != nil {
		return nil, err
	}
	s.apply(ck, false)
	q.next = max(q.next, next)
	s.commitBoundary(k, q)
	out := make([]Delivery, len(msgs))
	for i, m := range msgs {
		out[i] = Delivery{Message: m, Attempt: attempts[i], Handle: Handle{
			StartOffset: offsets[0], RetrieveTime: popTime, InvisibleTime: r.Invisible.Milliseconds(),
			TopicType: TopicTypeNormal, BrokerName: s.opts.BrokerName, QueueID: k.queueID,
			Offset: offsets[i], CommitLogOffset: m.PhysicalOffset,
		}}
	}
	return out, nil
}

// read returns the message at offset o of k's queue, or nil when it is gone.
func (s *Service) read(k queueKey, o int64) *message.Message {
	res := s.opts.Store.GetMessage(k.group, k.topic, k.queueID, o, 1, nil)
	defer res.Release()
	if res.Status != store.Found || len(res.Messages) == 0 {
		return nil
	}
	m, _, err := message.Decode(res.Messages[0].Bytes())
	if err != nil || m.QueueOffset != o {
		return nil
	}
	return m
}

// retire ends a delivery without an ack: the message went to the
// dead-letter topic, or is gone from the store (s.mu held).
func (s *Service) retire(k queueKey, q *queueState, o int64, e *entry, m *message.Message) error {
	if m != nil {
		if s.opts.DeadLetter == nil {
			s.log.Warn("pop: dropping a message delivered too often: no dead-letter topic", "group", k.group, "topic", k.topic, "offset", o)
		} else {
			dlq := *m
			dlq.Properties = withProperties(m.Properties, map[string]string{
				message.PropertyDLQOriginTopic:     k.topic,
				message.PropertyDLQOriginMessageID: uniqID(m),
				message.PropertyReconsumeTime:      fmt.Sprint(e.attempts),
			})
			dlq.ReconsumeTimes = e.attempts
			if err := s.opts.DeadLetter(k.group, &dlq); err != nil {
				return fmt.Errorf("pop: moving %s/%d offset %d to the dead-letter topic: %w", k.topic, k.queueID, o, err)
			}
		}
	}
	ack := &ackRecord{group: k.group, topic: k.topic, queueID: k.queueID, popTime: e.popTime, offset: o}
	if err := s.putRecord(tagAck, ack.encode()); err != nil {
		return err
	}
	s.apply(ack, false)
	s.commitBoundary(k, q)
	return nil
}

func withProperties(props string, add map[string]string) string {
	p := message.ParseProperties(props)
	for k, v := range add {
		p[k] = v
	}
	return message.EncodeProperties(p)
}

// uniqID is the producer's message id (UNIQ_KEY), else the offset id.
func uniqID(m *message.Message) string {
	if id, ok := message.LookupProperty(m.Properties, message.PropertyUniqClientMessageIDKeyIndex); ok {
		return id
	}
	return message.OffsetMsgID(m.StoreHost, m.PhysicalOffset)
}

// lookup finds the delivery h names (s.mu held).
func (s *Service) lookup(group, topic string, h Handle) (queueKey, *queueState, *entry, error) {
	k := queueKey{group, topic, h.QueueID}
	if h.BrokerName != s.opts.BrokerName {
		return k, nil, nil, fmt.Errorf("%w: broker %q, this is %q", ErrUnknownHandle, h.BrokerName, s.opts.BrokerName)
	}
	q := s.queues[k]
	if q == nil {
		return k, nil, nil, ErrUnknownHandle
	}
	e := q.inflight[h.Offset]
	if e == nil {
		if h.Offset < q.next && h.RetrieveTime <= s.lastTime {
			return k, q, nil, nil // acked already
		}
		return k, nil, nil, ErrUnknownHandle
	}
	if e.popTime != h.RetrieveTime {
		if h.RetrieveTime > s.lastTime {
			return k, nil, nil, ErrUnknownHandle
		}
		return k, nil, nil, ErrStaleHandle
	}
	return k, q, e, nil
}

// Ack ends the delivery h names. A handle of a message acked already is
// acked again without effect (as Apache answers it). Errors:
// ErrUnknownHandle, ErrStaleHandle, or the revive log's put failing.
func (s *Service) Ack(group, topic string, h Handle) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, q, e, err := s.lookup(group, topic, h)
	if err != nil || e == nil {
		return err
	}
	ack := &ackRecord{group: group, topic: topic, queueID: h.QueueID, popTime: e.popTime, offset: h.Offset}
	if err := s.putRecord(tagAck, ack.encode()); err != nil {
		return err
	}
	s.apply(ack, false)
	s.commitBoundary(k, q)
	return nil
}

// ChangeInvisible makes the message h names invisible for d from now (0:
// visible at once) and returns its new handle; the old one is stale.
func (s *Service) ChangeInvisible(group, topic string, h Handle, d time.Duration) (Handle, error) {
	if s.closed.Load() {
		return Handle{}, ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, e, err := s.lookup(group, topic, h)
	if err != nil {
		return Handle{}, err
	}
	if e == nil {
		return Handle{}, fmt.Errorf("%w: the message was acked", ErrStaleHandle)
	}
	now := time.Now()
	popTime := s.popTime(now) // may be ahead of now: visibleAt counts from now
	ck := &ckRecord{group: group, topic: topic, queueID: h.QueueID, popTime: popTime,
		visibleAt: now.UnixMilli() + d.Milliseconds(), offsets: []int64{h.Offset}, attempts: []int32{e.attempts}}
	if err := s.putRecord(tagCK, ck.encode()); err != nil {
		return Handle{}, err
	}
	s.apply(ck, false)
	nh := h
	nh.StartOffset, nh.RetrieveTime, nh.InvisibleTime = h.Offset, popTime, d.Milliseconds()
	if d <= 0 {
		s.wake(topic)
	}
	return nh, nil
}

// InFlight returns how many deliveries of group on topic are not acked.
func (s *Service) InFlight(group, topic string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, q := range s.queues {
		if k.group == group && k.topic == topic {
			n += len(q.inflight)
		}
	}
	return n
}

// DeadLetter moves the message h names to the group's dead-letter topic
// now and ends its delivery (ForwardMessageToDeadLetterQueue).
func (s *Service) DeadLetter(group, topic string, h Handle) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, q, e, err := s.lookup(group, topic, h)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: the message was acked", ErrStaleHandle)
	}
	return s.retire(k, q, h.Offset, e, s.read(k, h.Offset))
}

// Available reports whether a pop of group on topic (queueID -1: any
// queue) would find a message now, without delivering one (NOTIFICATION).
func (s *Service) Available(group, topic string, queueID int32) bool {
	n := int32(s.opts.QueueNums(topic))
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	for qid := int32(0); qid < n; qid++ {
		if queueID >= 0 && qid != queueID {
			continue
		}
		q := s.queue(queueKey{group, topic, qid}, true)
		for _, e := range q.inflight {
			if e.visibleAt <= now {
				return true
			}
		}
		if q.next < s.opts.Store.GetMaxOffsetInQueue(topic, qid) {
			return true
		}
	}
	return false
}
