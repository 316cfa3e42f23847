package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/consumequeue"
	"github.com/rocketstore/rocketstore/indexfile"
	"github.com/rocketstore/rocketstore/message"
)

// Arrival tells a listener that a message reached its ConsumeQueue
// (RocketMQ's MessageArrivingListener). Topic stays valid after the call.
type Arrival struct {
	Topic          string
	QueueID        int32
	QueueOffset    int64 // the message's offset in its queue; the queue's max offset is one more
	TagsCode       int64
	StoreTimestamp int64
	Size           int32 // of the stored record, in bytes
	SysFlag        int32 // the record's sysFlag (message.TxCommit for a committed transaction)
}

// ArrivalListener is called for every message that enters a ConsumeQueue,
// in CommitLog order, one call at a time, by the goroutine dispatching it:
// often the one that put the message. It must not block.
type ArrivalListener func(Arrival)

// AddArrivalListener registers fn to be called for every dispatched message.
func (s *MessageStore) AddArrivalListener(fn ArrivalListener) {
	s.listenersMu.Lock()
	defer s.listenersMu.Unlock()
	var ls []ArrivalListener
	if old := s.listeners.Load(); old != nil {
		ls = slices.Clone(*old)
	}
	ls = append(ls, fn)
	s.listeners.Store(&ls)
}

// reputState is the ReputMessageService's state.
//
// Records are dispatched by whoever holds dispatching: the reput goroutine,
// or a put that has just made its record readable (dispatchAfterPut). A put
// dispatches on its own goroutine, while its record is still in this core's
// cache (read back by the reput goroutine on the other core, every record
// cost a cache miss or two), and when its own record is the next one it
// dispatches it from the message, without reading it back. A put that
// finds the lock taken by another put leaves its record to that one, which
// looks again after letting go; taken by the reput goroutine or Close, it
// waits. So one producer reads its message back as soon as PutMessage
// returns; with several, a moment later.
type reputState struct {
	from atomic.Int64 // reputFromOffset: the next CommitLog offset to dispatch
	wake chan struct{}
	idle atomic.Bool // parked: a put must wake it

	dispatching sync.Mutex
	// others counts the goroutines other than puts (the reput goroutine,
	// Close) holding dispatching or about to take it: a put that finds it
	// taken waits only for those (lockOther).
	others atomic.Int32
	// Guarded by dispatching:
	it        commitlog.Iterator  // reused, so that a put's dispatch does not allocate
	failedAt  int64               // offset of a record that failed to dispatch, logged once
	lastQueue *consumequeue.Queue // the queue of the last record
	stopped   bool                // set by Close: the files are closing
	// index holds the index entries of dispatched records not yet put
	// (their strings alias the records, all in one CommitLog file, or the
	// put's message): they are put together (indexfile.PutBatch) before the
	// reput offset passes them.
	index [indexBatch]indexfile.Message
	nidx  int

	mu       sync.Mutex    // guards advanced
	advanced chan struct{} // closed and replaced when from moves while waiters > 0
	waiters  atomic.Int32  // goroutines in WaitDispatched
}

// Dispatch polls the CommitLog every reputPoll while records keep coming,
// as RocketMQ's ReputMessageService does, so a put never pays for waking
// it. After reputBusyWindow without records it parks; then a put wakes it
// at once, and it looks by itself every reputIdle (records written by
// replication, for one).
const (
	reputPoll       = time.Millisecond
	reputBusyWindow = 50 * time.Millisecond
	reputIdle       = 10 * time.Millisecond

	reputPublishEvery = 64
	indexBatch        = 32 // records whose index entries are put together
)

// wakeReput wakes a parked reput goroutine; while it polls, it costs
// one atomic load.
func (s *MessageStore) wakeReput() {
	if !s.reput.idle.Load() {
		return
	}
	select {
	case s.reput.wake <- struct{}{}:
	default:
	}
}

// reputLoop is the reput goroutine: it follows the CommitLog and builds
// the ConsumeQueues and the index.
func (s *MessageStore) reputLoop() {
	t := time.NewTimer(reputPoll)
	defer t.Stop()
	lastMoved := time.Now()
	seen := s.reput.from.Load()
	for {
		// Puts dispatch their own records: step in only when the reput
		// offset did not move since the last look, or this goroutine and
		// the puts would take the work from each other.
		if from := s.reput.from.Load(); from != seen {
			seen, lastMoved = from, time.Now()
		} else if s.doReput() {
			seen, lastMoved = s.reput.from.Load(), time.Now()
		}
		if time.Since(lastMoved) < reputBusyWindow {
			t.Reset(reputPoll)
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			continue
		}
		s.reput.idle.Store(true)
		if s.doReput() { // a put that saw idle=false before it was set
			s.reput.idle.Store(false)
			seen, lastMoved = s.reput.from.Load(), time.Now()
			continue
		}
		t.Reset(reputIdle)
		select {
		case <-s.stop:
			s.reput.idle.Store(false)
			return
		case <-s.reput.wake:
		case <-t.C:
		}
		s.reput.idle.Store(false)
	}
}

// doReput dispatches every readable record from the reput offset on and
// reports whether it dispatched any.
func (s *MessageStore) doReput() bool {
	moved := false
	for {
		s.lockOther()
		m := s.dispatchReadable(nil)
		s.unlockOther()
		moved = moved || m
		// More may have become readable while the lock was held.
		if !m || s.reput.from.Load() >= s.dispatchLimit() {
			return moved
		}
	}
}

// lockOther takes dispatching for a goroutine that is not a put, saying
// so first: a put that then finds it taken waits instead of leaving its
// record to the holder. (Puts say nothing: two atomic stores per put.)
func (s *MessageStore) lockOther() {
	s.reput.others.Add(1)
	s.reput.dispatching.Lock()
}

// unlockOther releases what lockOther took.
func (s *MessageStore) unlockOther() {
	s.reput.dispatching.Unlock()
	s.reput.others.Add(-1)
}

// ownRecord is what a put knows of the record it wrote: all that dispatch
// reads, taken from the message rather than read back from the record.
type ownRecord struct {
	rec recordInfo
	end int64 // the CommitLog offset after the record
}

// dispatchAfterPut dispatches, on the putting goroutine, what its put made
// readable (see reputState). own, if not nil, is the put's record.
func (s *MessageStore) dispatchAfterPut(own *ownRecord) {
	for s.reput.from.Load() < s.dispatchLimit() {
		if !s.reput.dispatching.TryLock() {
			if s.reput.others.Load() == 0 {
				return // another put dispatches, and looks again after letting go
			}
			s.reput.dispatching.Lock() // the reput goroutine or Close: wait for it
		}
		moved := s.dispatchReadable(own)
		s.reput.dispatching.Unlock()
		if !moved {
			if s.reput.from.Load() < s.dispatchLimit() {
				s.wakeReput() // a record that fails: the reput goroutine retries it
			}
			return
		}
		own = nil
	}
}

// dispatchLimit is the end of what may be dispatched. Under SyncFlush only
// what is durable is dispatched, so consumers never see a message a power
// loss could take back.
func (s *MessageStore) dispatchLimit() int64 {
	if s.opts.FlushDiskType == SyncFlush {
		return s.cl.FlushedOffset()
	}
	return s.cl.MaxOffset()
}

// dispatchReadable dispatches every readable record from the reput offset
// on and reports whether it dispatched any. own, if not nil, is a record a
// put knows. The caller holds dispatching.
func (s *MessageStore) dispatchReadable(own *ownRecord) bool {
	if s.reput.stopped {
		return false
	}
	from := s.reput.from.Load()
	if min := s.cl.MinOffset(); from < min {
		from = min // the head expired under us
	}
	limit := s.dispatchLimit()
	if from >= limit {
		return false
	}
	done, n := from, 0
	if own != nil && own.rec.offset == from && own.end <= limit {
		// The put's own record is next: no need to read it back.
		if err := s.dispatch(&own.rec); err != nil {
			s.dispatchFailed(from, err)
			return false
		}
		done = own.end
		if done >= limit {
			if err := s.putIndex(); err != nil {
				s.dispatchFailed(from, err)
				return false
			}
			return s.publishReput(from, done)
		}
	}
	it := &s.reput.it
	it.Reset(s.cl, done, false)
	defer it.Close()
	// The reput offset is published every reputPublishEvery records and at
	// the end: each atomic store is a barrier that waits for the unit and
	// index writes before it to reach memory.
	stopped := false // before the readable end: a limit or a failure
	var rec recordInfo
	// indexFrom is the offset of the first record whose index entries wait
	// in reput.index (done when none wait); where dispatch resumes if
	// putting them fails.
	indexFrom := from
	if s.reput.nidx == 0 {
		indexFrom = done
	}
	// putIndex puts the waiting entries; if that fails, dispatch stops
	// before the first record they belong to.
	putIndex := func() bool {
		if err := s.putIndex(); err != nil {
			done = min(done, indexFrom)
			s.dispatchFailed(indexFrom, err)
			stopped = true
			return false
		}
		return true
	}
	fileSize := int64(s.cl.FileSize())
	for it.Next() {
		r, off := it.Record(), it.RecordOffset()
		if off+int64(len(r)) > limit {
			stopped = true
			break
		}
		// Entries waiting alias a file the iterator is about to let go of.
		if s.reput.nidx > 0 && off/fileSize != indexFrom/fileSize && !putIndex() {
			break
		}
		if s.reput.nidx == 0 {
			indexFrom = off
		}
		rec.fill(r, off)
		if err := s.dispatch(&rec); err != nil {
			s.dispatchFailed(off, err)
			stopped = true
			break
		}
		done = it.Offset()
		n++
		if publish := n%reputPublishEvery == 0; publish || s.reput.nidx == indexBatch {
			if !putIndex() {
				break
			}
			if publish {
				s.reput.from.Store(done)
			}
		}
	}
	putIndex()
	if err := it.Err(); err != nil {
		s.dispatchFailed(it.Offset(), err)
	} else if !stopped {
		// At the readable end, past any END_OF_FILE padding after the last
		// record: the padding counts as dispatched, or a log that ends with
		// it (a crash right after a roll-over) would never be caught up.
		done = max(done, min(it.Offset(), limit))
	}
	return s.publishReput(from, done)
}

// publishReput moves the reput offset from from to done, waking
// WaitDispatched, and reports whether it moved.
func (s *MessageStore) publishReput(from, done int64) bool {
	if done == from {
		return false
	}
	s.reput.from.Store(done)
	if s.reput.waiters.Load() > 0 {
		s.reput.mu.Lock()
		close(s.reput.advanced)
		s.reput.advanced = make(chan struct{})
		s.reput.mu.Unlock()
	}
	return true
}

// dispatchFailed logs a record that could not be dispatched, once: dispatch
// stays there, so nothing after it is served out of order.
func (s *MessageStore) dispatchFailed(off int64, err error) {
	if s.reput.failedAt == off+1 {
		return
	}
	s.reput.failedAt = off + 1
	s.log.Error("dispatch stopped at a record it cannot dispatch", "offset", off, "err", err)
}

// dispatchProperties are the properties dispatch reads, found in one pass.
var dispatchProperties = [...]string{
	propTags:    message.PropertyTags,
	propKeys:    message.PropertyKeys,
	propUniqKey: message.PropertyUniqClientMessageIDKeyIndex,
	propDelay:   message.PropertyDelayTimeLevel,
}

const (
	propTags = iota
	propKeys
	propUniqKey
	propDelay
)

// recordProps are the values of dispatchProperties in one record's
// properties.
type recordProps struct {
	vals  [len(dispatchProperties)]string // aliasing the properties
	found uint64                          // bit i: vals[i] is there
}

func (p *recordProps) lookup(props string) {
	p.found = message.LookupProperties(props, dispatchProperties[:], p.vals[:])
}

func (p *recordProps) has(i int) bool { return p.found&(1<<i) != 0 }

// recordInfo is what dispatch reads of one record.
type recordInfo struct {
	offset, queueOffset, storeTimestamp int64
	size, queueID, sysFlag              int32
	topic                               string // aliasing the record or the message
	props                               recordProps
}

// fill reads rec from the record r at CommitLog offset off.
func (rec *recordInfo) fill(r message.Record, off int64) {
	rec.offset, rec.queueOffset, rec.storeTimestamp = off, r.QueueOffset(), r.StoreTimestamp()
	rec.size, rec.queueID, rec.sysFlag = r.TotalSize(), r.QueueID(), r.SysFlag()
	rec.topic = bytesString(r.Topic())
	rec.props.lookup(bytesString(r.Properties()))
}

// dispatch builds the ConsumeQueue unit of one record and adds its index
// entries to reput.index, for putIndex (CommitLogDispatcherBuildConsumeQueue,
// CommitLogDispatcherBuildIndex). The caller holds dispatching, and calls
// putIndex before reput.index is full and before the reput offset passes
// the record.
func (s *MessageStore) dispatch(rec *recordInfo) error {
	if ts := rec.storeTimestamp; s.lastDispatchedTime.Load() != ts {
		s.lastDispatchedTime.Store(ts)
	}
	props := &rec.props
	switch rec.sysFlag & message.TxMask {
	case 0, message.TxCommit:
		code := message.TagsCode(props.vals[propTags])
		if props.has(propDelay) && rec.topic == message.TopicSchedule {
			if at, ok := s.deliverAt(props.vals[propDelay], rec.storeTimestamp); ok {
				code = at // when it is due, as RocketMQ keeps it
			}
		}
		q, err := s.dispatchQueue(rec.topic, rec.queueID)
		if err != nil {
			return err
		}
		unit := consumequeue.Unit{Offset: rec.offset, Size: rec.size, TagsCode: code}
		err = q.Put(unit, rec.queueOffset)
		if err != nil && !errors.Is(err, consumequeue.ErrInvalidUnit) {
			s.reput.lastQueue = nil // the next try looks the queue up again
			return fmt.Errorf("store: dispatch to %s/%d: %w", q.Topic(), q.QueueID(), err)
		}
		s.notify(Arrival{Topic: q.Topic(), QueueID: q.QueueID(), QueueOffset: rec.queueOffset,
			TagsCode: code, StoreTimestamp: rec.storeTimestamp, Size: rec.size, SysFlag: rec.sysFlag})
	}
	if s.index != nil && (props.has(propKeys) || props.has(propUniqKey)) {
		s.reput.index[s.reput.nidx] = indexfile.Message{
			Topic: rec.topic, Keys: props.vals[propKeys], UniqKey: props.vals[propUniqKey],
			PhyOffset: rec.offset, StoreTimestamp: rec.storeTimestamp, SysFlag: rec.sysFlag,
		}
		s.reput.nidx++
	}
	return nil
}

// putIndex puts the index entries waiting in reput.index. The caller holds
// dispatching.
func (s *MessageStore) putIndex() error {
	n := s.reput.nidx
	if n == 0 {
		return nil
	}
	s.reput.nidx = 0
	batch := s.reput.index[:n]
	err := s.index.PutBatch(batch)
	if err != nil {
		err = fmt.Errorf("store: index records from %d: %w", batch[0].PhyOffset, err)
	}
	clear(batch) // holds no put's message past its put
	return err
}

func (s *MessageStore) notify(a Arrival) {
	if ls := s.listeners.Load(); ls != nil {
		for _, fn := range *ls {
			fn(a)
		}
	}
}

// dispatchQueue returns the ConsumeQueue of topic/queueID, creating it if
// needed. It keeps the last one: records of one queue often follow each
// other. The caller holds dispatching.
func (s *MessageStore) dispatchQueue(topic string, queueID int32) (*consumequeue.Queue, error) {
	if q := s.reput.lastQueue; q != nil && q.QueueID() == queueID && q.Topic() == topic {
		return q, nil
	}
	q := s.cqs.Get(topic, queueID)
	if q == nil {
		var err error
		if q, err = s.cqs.GetOrCreate(strings.Clone(topic), queueID); err != nil {
			return nil, err
		}
	}
	s.reput.lastQueue = q
	return q, nil
}

// DispatchedOffset is the CommitLog offset up to which every record is in
// its ConsumeQueue and the index.
func (s *MessageStore) DispatchedOffset() int64 { return s.reput.from.Load() }

// WaitDispatched waits until every record readable when it was called is
// dispatched, or timeout passes; it reports whether dispatch caught up.
func (s *MessageStore) WaitDispatched(timeout time.Duration) bool {
	target := s.cl.MaxOffset()
	s.reput.waiters.Add(1)
	defer s.reput.waiters.Add(-1)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.reput.mu.Lock()
		ch := s.reput.advanced
		s.reput.mu.Unlock()
		if s.reput.from.Load() >= target {
			return true
		}
		s.wakeReput()
		select {
		case <-ch:
		case <-deadline.C:
			return s.reput.from.Load() >= target
		}
	}
}
