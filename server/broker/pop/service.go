package pop

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

// Errors of Ack and ChangeInvisible, for the codes clients expect.
var (
	// ErrUnknownHandle: the handle names a message this group was never
	// given (a forged handle, or one of another broker or group).
	ErrUnknownHandle = errors.New("pop: the receipt handle names no message delivered to this group")
	// ErrStaleHandle: the message was delivered again, or its invisible
	// time changed, since the handle was made; the newer handle counts.
	ErrStaleHandle = errors.New("pop: the receipt handle is stale: the message was delivered again or its invisible time changed")
	// ErrClosed: the service is closed.
	ErrClosed = errors.New("pop: closed")
)

// Options configure a Service. Store, ReviveTopic and BrokerName are required.
type Options struct {
	Store *store.MessageStore
	// ReviveTopic holds the check-point and ack records
	// (rmq_sys_REVIVE_LOG_<cluster>); queue 0 is used.
	ReviveTopic string
	// BrokerName goes into every receipt handle; handles of other names are refused.
	BrokerName string
	// StoreHost is stamped as the born host of the revive records.
	StoreHost netip.AddrPort
	// QueueNums gives the read queue count of a topic (0: no such topic).
	QueueNums func(topic string) int
	// ConsumerOffset and CommitOffset read and keep a group's consumer
	// offset (nil: none kept).
	ConsumerOffset func(group, topic string, queueID int32) (int64, bool)
	CommitOffset   func(group, topic string, queueID int32, offset int64)
	// MaxDeliveryAttempts gives a group's maximum deliveries of a message
	// (retryMaxTimes+1); nil: 17.
	MaxDeliveryAttempts func(group string) int
	// DeadLetter stores m, a message delivered too often, in group's
	// dead-letter topic. nil: such messages are dropped with a warning.
	DeadLetter func(group string, m *message.Message) error
	// ReviveInterval is how often expired deliveries are looked for (0: 1 s).
	ReviveInterval time.Duration
	Logger         *slog.Logger
}

// Request is one receive.
type Request struct {
	Group, Topic string
	// QueueID -1 pops from all queues of the topic (as Apache's proxy
	// always does); otherwise from that queue only.
	QueueID     int32
	MaxMessages int
	Invisible   time.Duration
	Filter      store.Filter // nil: all messages
	FIFO        bool         // a queue's next messages only when the previous were acked
}

// Delivery is one message handed out.
type Delivery struct {
	Message *message.Message // decoded; owns its bytes
	Handle  Handle
	Attempt int32 // 1 at the first delivery
}

type queueKey struct {
	group, topic string
	queueID      int32
}

// entry is a delivered, not yet acked message.
type entry struct {
	popTime   int64 // the RetrieveTime of its current handle
	visibleAt int64 // ms
	attempts  int32
	woken     bool // the revive loop has told waiters it is visible again
}

type queueState struct {
	next     int64 // offsets below were delivered, acked or skipped by the filter
	inflight map[int64]*entry
}

// Service is POP consumption over one store.
type Service struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex // guards queues, lastTime, rr
	queues   map[queueKey]*queueState
	lastTime int64  // the last popTime given: popTimes only grow, so handles differ
	rr       uint32 // where the next pop starts among the queues

	wmu     sync.Mutex // guards waiters
	waiters map[string]chan struct{}
	waiting atomic.Int32 // len(waiters), read without wmu on the arrival path

	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Open replays the revive log of opts.Store and starts the revive loop.
func Open(opts Options) (*Service, error) {
	if opts.Store == nil || opts.ReviveTopic == "" || opts.BrokerName == "" {
		return nil, errors.New("pop: Store, ReviveTopic and BrokerName are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReviveInterval <= 0 {
		opts.ReviveInterval = time.Second
	}
	if opts.QueueNums == nil {
		opts.QueueNums = func(string) int { return 0 }
	}
	s := &Service{opts: opts, log: opts.Logger, queues: map[queueKey]*queueState{},
		waiters: map[string]chan struct{}{}, stop: make(chan struct{})}
	n, err := s.replay()
	if err != nil {
		return nil, err
	}
	s.log.Info("pop state replayed", "records", n, "queues", len(s.queues), "topic", opts.ReviveTopic)
	s.wg.Go(s.reviveLoop)
	return s, nil
}

// Close stops the revive loop and wakes every waiter.
func (s *Service) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	close(s.stop)
	s.wg.Wait()
	s.wmu.Lock()
	for t, ch := range s.waiters {
		close(ch)
		delete(s.waiters, t)
	}
	s.waiting.Store(0)
	s.wmu.Unlock()
}

// replay rebuilds the state from the revive log.
func (s *Service) replay() (int, error) {
	st := s.opts.Store
	off := st.GetMinOffsetInQueue(s.opts.ReviveTopic, 0)
	records := 0
	for {
		res := st.GetMessage("", s.opts.ReviveTopic, 0, off, 64, nil)
		if res.Status != store.Found {
			next := res.NextBeginOffset
			res.Release()
			if next > off && res.Status != store.OffsetOverflowBadly {
				off = next
				continue
			}
			break
		}
		for _, sl := range res.Messages {
			rec, err := message.Parse(sl.Bytes())
			if err != nil {
				s.log.Warn("pop: skipping an unreadable revive record", "offset", off, "err", err)
				continue
			}
			r, err := parseRecord(rec.Body())
			if err != nil {
				s.log.Warn("pop: skipping a revive record", "err", err)
				continue
			}
			s.apply(r, true)
			records++
		}
		off = res.NextBeginOffset
		res.Release()
	}
	for k, q := range s.queues {
		if c, ok := s.consumerOffset(k); ok && c > q.next {
			q.next = c
		}
		for o := range q.inflight {
			if c, ok := s.consumerOffset(k); ok && o < c {
				delete(q.inflight, o)
			}
		}
		// The consumer offset file may be older than the log (it is
		// written every few seconds): bring it to what the log says.
		s.commitBoundary(k, q)
	}
	return records, nil
}

func (s *Service) consumerOffset(k queueKey) (int64, bool) {
	if s.opts.ConsumerOffset == nil {
		return 0, false
	}
	return s.opts.ConsumerOffset(k.group, k.topic, k.queueID)
}

// apply changes the state as a record says (s.mu held, or in replay).
func (s *Service) apply(r any, replaying bool) {
	switch r := r.(type) {
	case *ckRecord:
		q := s.queue(queueKey{r.group, r.topic, r.queueID}, !replaying)
		for i, o := range r.offsets {
			q.inflight[o] = &entry{popTime: r.popTime, visibleAt: r.visibleAt, attempts: r.attempts[i]}
			q.next = max(q.next, o+1)
		}
		s.lastTime = max(s.lastTime, r.popTime)
	case *ackRecord:
		q := s.queue(queueKey{r.group, r.topic, r.queueID}, !replaying)
		if e := q.inflight[r.offset]; e != nil && e.popTime == r.popTime {
			delete(q.inflight, r.offset)
		}
		q.next = max(q.next, r.offset+1)
	}
}

// queue returns k's state, made if missing; a new state starts at the
// group's consumer offset when init, else at 0 (replay sets it).
func (s *Service) queue(k queueKey, init bool) *queueState {
	q := s.queues[k]
	if q == nil {
		q = &queueState{inflight: map[int64]*entry{}}
		if init {
			q.next = s.initOffset(k)
		}
		s.queues[k] = q
	}
	return q
}

// initOffset is where a group that never popped a queue starts: its
// consumer offset, else the queue's first message when none expired yet,
// else the queue's end (Apache: ConsumeInitMode.MAX with
// initPopOffsetByCheckMsgInMem).
func (s *Service) initOffset(k queueKey) int64 {
	if c, ok := s.consumerOffset(k); ok {
		return c
	}
	st := s.opts.Store
	if min := st.GetMinOffsetInQueue(k.topic, k.queueID); min > 0 {
		return st.GetMaxOffsetInQueue(k.topic, k.queueID)
	}
	return 0
}

// popTime returns a new delivery time: now, or one more than the last one.
func (s *Service) popTime(now time.Time) int64 {
	t := max(now.UnixMilli(), s.lastTime+1)
	s.lastTime = t
	return t
}

// The properties of the revive log's records: their tag.
var (
	ckProps  = string(message.AppendProperty(nil, message.PropertyTags, tagCK))
	ackProps = string(message.AppendProperty(nil, message.PropertyTags, tagAck))
)

// putRecord appends a record to the revive log.
func (s *Service) putRecord(tag string, body []byte) error {
	props := ackProps
	if tag == tagCK {
		props = ckProps
	}
	m := &message.Message{
		Topic:         s.opts.ReviveTopic,
		Body:          body,
		Properties:    props,
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      s.opts.StoreHost,
	}
	if _, err := s.opts.Store.PutMessage(m); err != nil {
		return fmt.Errorf("pop: writing the %s record: %w", tag, err)
	}
	return nil
}

// commitBoundary keeps the group's consumer offset at the first offset
// not yet acked (s.mu held).
func (s *Service) commitBoundary(k queueKey, q *queueState) {
	if s.opts.CommitOffset == nil {
		return
	}
	b := q.next
	for o := range q.inflight {
		b = min(b, o)
	}
	s.opts.CommitOffset(k.group, k.topic, k.queueID, b)
}

func (s *Service) maxAttempts(group string) int32 {
	if s.opts.MaxDeliveryAttempts == nil {
		return 17
	}
	return int32(max(1, s.opts.MaxDeliveryAttempts(group)))
}
