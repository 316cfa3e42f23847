package store

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

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
	// Properties are the record's encoded properties (RocketMQ passes
	// them to the listener for the filter's sake). They alias the record
	// or the message put: valid only during the call, never to be kept.
	Properties string
}

// ArrivalListener is called for every message that enters a ConsumeQueue,
// in CommitLog order, one call at a time, by the goroutine dispatching it:
// often the one that put the message. It must not block.
type ArrivalListener func(Arrival)

// AddArrivalListener registers fn to be called for every dispatched message.
func (s *MessageStore) AddArrivalListener(fn ArrivalListener) {
	d := s.disp
	d.listenersMu.Lock()
	defer d.listenersMu.Unlock()
	var ls []ArrivalListener
	if old := d.listeners.Load(); old != nil {
		ls = slices.Clone(*old)
	}
	ls = append(ls, fn)
	d.listeners.Store(&ls)
}

// dispatcher is RocketMQ's ReputMessageService: it follows the CommitLog
// and, one record at a time in CommitLog order, writes each record's
// ConsumeQueue unit and index entries and tells the arrival listeners.
//
//	CommitLog  0        min             from                limit        MaxOffset
//	           |expired |  dispatched    |  readable, waiting |  written   |
//	                                     ^                    ^
//	                          the reput offset      FlushedOffset (SyncFlush)
//	                                                or MaxOffset (AsyncFlush)
//
//	   put ──append──> CommitLog ──flush (SyncFlush)──> dispatchAfterPut ─┐
//	   reput goroutine (polls 1 ms while busy, parks when idle) ──────────┤
//	   recovery, Close ───────────────────────────────────────────────────┤
//	                                  whoever holds mu dispatches [from, limit)
//
// Invariants:
//
//   - Who may dispatch: only the holder of mu. A put takes it with TryLock
//     and, if another put holds it, leaves its record to that put, which
//     looks again after letting go; it waits only for the others (the reput
//     goroutine, recovery, Close), which say so in others first (lockOther).
//   - The reput offset (from): every record below it is in its ConsumeQueue
//     and the index, and its arrival told. It moves only forward, only under
//     mu, and never past limit, so under SyncFlush a consumer never sees a
//     record a power loss could take back. It is stored after the writes it
//     covers, so a reader that loads it sees them (published every
//     reputPublishEvery records and at the end of each pass).
//   - When dispatch fails on a record (its ConsumeQueue cannot be written;
//     an index that cannot be written only lags, see indexlag.go), from
//     stays before it, nothing after it is dispatched, and
//     the store's runningFlags say dispatchStopped: puts are refused until a
//     pass gets past it (the reput goroutine retries). The record and those
//     after it stay in the CommitLog and are dispatched once the cause is
//     gone.
//   - When a put may return PutOK: once its record is below from, or it has
//     been left to a put holding mu (dispatched within that put's pass), and
//     dispatch had not stopped when it looked. A put whose record is still
//     above from while dispatch is stopped fails with ErrNotWritable.
//   - After Close (stopped) nothing is dispatched: the files are closing.
//
// A put dispatches on its own goroutine, while its record is still in this
// core's cache (read back by the reput goroutine on the other core, every
// record would cost a cache miss or two), and when its own record is the
// next one it dispatches it from the message, without reading it back. So
// one producer reads its message back as soon as PutMessage returns; with
// several, a moment later.
type dispatcher struct {
	cl        *commitlog.Log
	cqs       *consumequeue.Table
	index     *indexfile.Service // nil when the index is off
	syncFlush bool
	delays    []time.Duration
	flags     *runningFlags
	log       *slog.Logger

	from atomic.Int64 // reputFromOffset: the next CommitLog offset to dispatch
	wake chan struct{}
	idle atomic.Bool // parked: a put must wake it

	mu sync.Mutex // held by whoever dispatches
	// others counts the goroutines other than puts (the reput goroutine,
	// recovery, Close) holding mu or about to take it: a put that finds it
	// taken waits only for those (lockOther).
	others atomic.Int32
	// Guarded by mu:
	it       commitlog.Iterator // reused, so that a put's dispatch does not allocate
	failedAt int64              // 1 + the offset of the record dispatch stopped at; 0 when none
	// recent holds the queues of recent records, by queue id modulo its
	// length: records of a topic's few queues often take turns.
	recent  [recentQueues]*consumequeue.Queue
	stopped bool // set by Close: the files are closing
	// noQueues makes dispatch leave the ConsumeQueues alone: set by
	// BenchmarkPutMessage_Queues only, to measure a put without them.
	noQueues bool
	// batch holds the index entries of dispatched records not yet put
	// (their strings alias the records, all in one CommitLog file, or the
	// put's message): they are put together (indexfile.PutBatch) before the
	// reput offset passes them.
	batch [indexBatch]indexfile.Message
	nidx  int
	// indexLag and indexTried: see indexlag.go. indexLagging mirrors
	// indexLag != 0 for readers that do not hold mu.
	indexLag     int64
	indexTried   time.Time
	indexLagging atomic.Bool

	// lastTime is the store time of the last record dispatched (the
	// checkpoint's logicsMsgTimestamp once the queues are flushed).
	lastTime atomic.Int64

	listenersMu sync.Mutex // serialises changes to listeners
	listeners   atomic.Pointer[[]ArrivalListener]

	advancedMu sync.Mutex    // guards advanced
	advanced   chan struct{} // closed and replaced when from moves while waiters > 0
	waiters    atomic.Int32  // goroutines in WaitDispatched
}

// newDispatcher makes the dispatcher of a store's parts, at offset 0.
func newDispatcher(cl *commitlog.Log, cqs *consumequeue.Table, index *indexfile.Service, opts Options,
	delays []time.Duration, flags *runningFlags) *dispatcher {
	return &dispatcher{
		cl: cl, cqs: cqs, index: index, syncFlush: opts.FlushDiskType == SyncFlush,
		delays: delays, flags: flags, log: opts.Logger,
		wake: make(chan struct{}, 1), advanced: make(chan struct{}),
	}
}

// Dispatch polls the CommitLog every reputPoll while records keep coming,
// as RocketMQ's ReputMessageService does, so a put never pays for waking
// it. After reputBusyWindow without records it parks; then a put wakes it
// at once, and it looks by itself every reputIdle (records written by
// replication, for one, and retries after a failure).
const (
	reputPoll       = time.Millisecond
	reputBusyWindow = 50 * time.Millisecond
	reputIdle       = 10 * time.Millisecond

	reputPublishEvery = 64
	indexBatch        = 32 // records whose index entries are put together
)

// wakeUp wakes a parked reput goroutine; while it polls, it costs one
// atomic load.
func (d *dispatcher) wakeUp() {
	if !d.idle.Load() {
		return
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// loop is the reput goroutine, until stop is closed.
func (d *dispatcher) loop(stop <-chan struct{}) {
	t := time.NewTimer(reputPoll)
	defer t.Stop()
	lastMoved := time.Now()
	seen := d.from.Load()
	for {
		// Puts dispatch their own records: step in only when the reput
		// offset did not move since the last look, or this goroutine and
		// the puts would take the work from each other.
		if from := d.from.Load(); from != seen {
			seen, lastMoved = from, time.Now()
		} else if d.catchUp() {
			seen, lastMoved = d.from.Load(), time.Now()
		}
		if time.Since(lastMoved) < reputBusyWindow {
			t.Reset(reputPoll)
			select {
			case <-stop:
				return
			case <-t.C:
			}
			continue
		}
		d.idle.Store(true)
		if d.catchUp() { // a put that saw idle=false before it was set
			d.idle.Store(false)
			seen, lastMoved = d.from.Load(), time.Now()
			continue
		}
		t.Reset(reputIdle)
		select {
		case <-stop:
			d.idle.Store(false)
			return
		case <-d.wake:
		case <-t.C:
		}
		d.idle.Store(false)
	}
}

// catchUp dispatches, as one of the others, every readable record from the
// reput offset on and reports whether it dispatched any.
func (d *dispatcher) catchUp() bool {
	moved := false
	for {
		d.lockOther()
		d.catchUpIndex()
		m := d.dispatchReadable(nil)
		d.unlockOther()
		moved = moved || m
		// More may have become readable while the lock was held.
		if !m || d.from.Load() >= d.limit() {
			return moved
		}
	}
}

// lockOther takes mu for a goroutine that is not a put, saying so first: a
// put that then finds it taken waits instead of leaving its record to the
// holder. (Puts say nothing: two atomic stores per put.)
func (d *dispatcher) lockOther() {
	d.others.Add(1)
	d.mu.Lock()
}

// unlockOther releases what lockOther took.
func (d *dispatcher) unlockOther() {
	d.mu.Unlock()
	d.others.Add(-1)
}

// close dispatches what is readable, then stops dispatch for good: the
// files are about to close. A put still under way dispatches nothing.
func (d *dispatcher) close() {
	d.lockOther()
	d.dispatchReadable(nil)
	d.stopped = true
	d.unlockOther()
}

// ownRecord is what a put knows of the record it wrote: all that dispatch
// reads, taken from the message rather than read back from the record.
type ownRecord struct {
	rec recordInfo
	end int64 // the CommitLog offset after the record
}

// afterPut dispatches, on the putting goroutine, what its put made
// readable (see dispatcher). own, if not nil, is the put's record.
func (d *dispatcher) afterPut(own *ownRecord) {
	for d.from.Load() < d.limit() {
		if !d.mu.TryLock() {
			if d.others.Load() == 0 {
				return // another put dispatches, and looks again after letting go
			}
			d.mu.Lock() // the reput goroutine, recovery or Close: wait for it
		}
		moved := d.dispatchReadable(own)
		d.mu.Unlock()
		if !moved {
			if d.from.Load() < d.limit() {
				d.wakeUp() // a record that fails: the reput goroutine retries it
			}
			return
		}
		own = nil
	}
}

// limit is the end of what may be dispatched. Under SyncFlush only what is
// durable is dispatched, so consumers never see a message a power loss
// could take back.
func (d *dispatcher) limit() int64 {
	if d.syncFlush {
		return d.cl.FlushedOffset()
	}
	return d.cl.MaxOffset()
}

// dispatchReadable dispatches every readable record from the reput offset
// on and reports whether it dispatched any. own, if not nil, is a record a
// put knows. The caller holds mu.
func (d *dispatcher) dispatchReadable(own *ownRecord) bool {
	if d.stopped {
		return false
	}
	from := d.from.Load()
	if min := d.cl.MinOffset(); from < min {
		from = min // the head expired under us
	}
	limit := d.limit()
	if from >= limit {
		return false
	}
	done, n := from, 0
	if own != nil && own.rec.offset == from && own.end <= limit {
		// The put's own record is next: no need to read it back.
		if err := d.dispatch(&own.rec); err != nil {
			d.failed(from, err)
			return false
		}
		done = own.end
		if done >= limit {
			if err := d.putIndex(); err != nil {
				d.failed(from, err)
				return false
			}
			return d.publish(from, done)
		}
	}
	it := &d.it
	it.Reset(d.cl, done, false)
	defer it.Close()
	// The reput offset is published every reputPublishEvery records and at
	// the end: each atomic store is a barrier that waits for the unit and
	// index writes before it to reach memory.
	stopped := false // before the readable end: a limit or a failure
	var rec recordInfo
	// indexFrom is the offset of the first record whose index entries wait
	// in d.batch (done when none wait); where dispatch resumes if putting
	// them fails.
	indexFrom := from
	if d.nidx == 0 {
		indexFrom = done
	}
	// putIndex puts the waiting entries; if that fails, dispatch stops
	// before the first record they belong to.
	putIndex := func() bool {
		if err := d.putIndex(); err != nil {
			done = min(done, indexFrom)
			d.failed(indexFrom, err)
			stopped = true
			return false
		}
		return true
	}
	fileSize := int64(d.cl.FileSize())
	for it.Next() {
		r, off := it.Record(), it.RecordOffset()
		if off+int64(len(r)) > limit {
			stopped = true
			break
		}
		// Entries waiting alias a file the iterator is about to let go of.
		if d.nidx > 0 && off/fileSize != indexFrom/fileSize && !putIndex() {
			break
		}
		if d.nidx == 0 {
			indexFrom = off
		}
		rec.fill(r, off)
		if err := d.dispatch(&rec); err != nil {
			d.failed(off, err)
			stopped = true
			break
		}
		done = it.Offset()
		n++
		if publish := n%reputPublishEvery == 0; publish || d.nidx == indexBatch {
			if !putIndex() {
				break
			}
			if publish {
				d.from.Store(done)
			}
		}
	}
	putIndex()
	if err := it.Err(); err != nil {
		d.failed(it.Offset(), err)
	} else if !stopped {
		// At the readable end, past any END_OF_FILE padding after the last
		// record: the padding counts as dispatched, or a log that ends with
		// it (a crash right after a roll-over) would never be caught up.
		done = max(done, min(it.Offset(), limit))
	}
	return d.publish(from, done)
}

// publish moves the reput offset from from to done, waking WaitDispatched
// and, past the record dispatch had stopped at, letting puts in again. It
// reports whether the offset moved. The caller holds mu.
func (d *dispatcher) publish(from, done int64) bool {
	if done == from {
		return false
	}
	d.from.Store(done)
	if d.failedAt != 0 && done >= d.failedAt {
		d.failedAt = 0
		d.flags.clear(dispatchStopped)
	}
	if d.waiters.Load() > 0 {
		d.advancedMu.Lock()
		close(d.advanced)
		d.advanced = make(chan struct{})
		d.advancedMu.Unlock()
	}
	return true
}

// failed stops dispatch at the record at off that it could not dispatch:
// the reput offset stays there, so nothing after it is served out of
// order, and puts are refused until it gets past (runningFlags logs the
// change once). The caller holds mu.
func (d *dispatcher) failed(off int64, err error) {
	if d.failedAt == off+1 {
		return
	}
	d.failedAt = off + 1
	d.flags.set(dispatchStopped, fmt.Errorf("dispatch stopped at CommitLog offset %d: %w: %w", off, ErrDispatchStopped, err))
	if errors.Is(err, unix.ENOSPC) && !d.flags.has(diskFull) {
		// A ConsumeQueue (or index) file found no disk for its next
		// units: the disk is full, as for the CommitLog (noSpace), until
		// expiry finds room again.
		d.flags.set(diskFull, fmt.Errorf("no space left on the disk for consume queue or index units; free space or lower fileReservedTime: %w: %w",
			ErrDiskFull, err))
	}
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
	properties                          string // the encoded properties, aliasing likewise
	props                               recordProps
}

// fill reads rec from the record r at CommitLog offset off.
func (rec *recordInfo) fill(r message.Record, off int64) {
	rec.offset, rec.queueOffset, rec.storeTimestamp = off, r.QueueOffset(), r.StoreTimestamp()
	rec.size, rec.queueID, rec.sysFlag = r.TotalSize(), r.QueueID(), r.SysFlag()
	rec.topic = bytesString(r.Topic())
	rec.properties = bytesString(r.Properties())
	rec.props.lookup(rec.properties)
}

// dispatch builds the ConsumeQueue unit of one record and adds its index
// entries to d.batch, for putIndex (CommitLogDispatcherBuildConsumeQueue,
// CommitLogDispatcherBuildIndex). The caller holds mu, and calls
// putIndex before d.batch is full and before the reput offset passes
// the record.
func (d *dispatcher) dispatch(rec *recordInfo) error {
	if ts := rec.storeTimestamp; d.lastTime.Load() != ts {
		d.lastTime.Store(ts)
	}
	props := &rec.props
	switch rec.sysFlag & message.TxMask {
	case 0, message.TxCommit:
		if d.noQueues {
			break
		}
		code := message.TagsCode(props.vals[propTags])
		if props.has(propDelay) && rec.topic == message.TopicSchedule {
			if at, ok := deliverAt(d.delays, props.vals[propDelay], rec.storeTimestamp); ok {
				code = at // when it is due, as RocketMQ keeps it
			}
		}
		q, err := d.dispatchQueue(rec.topic, rec.queueID)
		if err != nil {
			return err
		}
		unit := consumequeue.Unit{Offset: rec.offset, Size: rec.size, TagsCode: code}
		err = q.Put(unit, rec.queueOffset)
		if err != nil && !errors.Is(err, consumequeue.ErrInvalidUnit) {
			d.recent[recentSlot(rec.queueID)] = nil // the next try looks the queue up again
			return fmt.Errorf("store: dispatch to %s/%d: %w", q.Topic(), q.QueueID(), err)
		}
		d.notify(Arrival{Topic: q.Topic(), QueueID: q.QueueID(), QueueOffset: rec.queueOffset,
			TagsCode: code, StoreTimestamp: rec.storeTimestamp, Size: rec.size, SysFlag: rec.sysFlag, Properties: rec.properties})
	}
	if d.index != nil && d.indexLag == 0 && (props.has(propKeys) || props.has(propUniqKey)) {
		d.batch[d.nidx] = indexfile.Message{
			Topic: rec.topic, Keys: props.vals[propKeys], UniqKey: props.vals[propUniqKey],
			PhyOffset: rec.offset, StoreTimestamp: rec.storeTimestamp, SysFlag: rec.sysFlag,
		}
		d.nidx++
	}
	return nil
}

// putIndex puts the index entries waiting in d.batch. If that fails,
// the index lags from the first of them (indexFailed) and dispatch goes
// on: the consume queues never wait for the index. The caller holds mu.
func (d *dispatcher) putIndex() error {
	n := d.nidx
	if n == 0 {
		return nil
	}
	d.nidx = 0
	batch := d.batch[:n]
	if err := d.index.PutBatch(batch); err != nil {
		d.indexFailed(batch[0].PhyOffset, fmt.Errorf("store: index records from %d: %w", batch[0].PhyOffset, err))
	}
	clear(batch) // holds no put's message past its put
	return nil
}

func (d *dispatcher) notify(a Arrival) {
	if ls := d.listeners.Load(); ls != nil {
		for _, fn := range *ls {
			fn(a)
		}
	}
}

// recentQueues is how many queues a dispatcher keeps at hand (a power of 2).
const recentQueues = 16

func recentSlot(queueID int32) int { return int(uint32(queueID) % recentQueues) }

// dispatchQueue returns the ConsumeQueue of topic/queueID, creating it if
// needed. It keeps the recent ones, a lookup in the table costing a map
// access with a hash of the topic: records of one topic's queues often
// follow each other. The caller holds mu.
func (d *dispatcher) dispatchQueue(topic string, queueID int32) (*consumequeue.Queue, error) {
	slot := recentSlot(queueID)
	if q := d.recent[slot]; q != nil && q.QueueID() == queueID && q.Topic() == topic {
		return q, nil
	}
	q := d.cqs.Get(topic, queueID)
	if q == nil {
		var err error
		if q, err = d.cqs.GetOrCreate(strings.Clone(topic), queueID); err != nil {
			return nil, err
		}
	}
	d.recent[slot] = q
	return q, nil
}

// DispatchedOffset is the CommitLog offset up to which every record is in
// its ConsumeQueue and the index.
func (s *MessageStore) DispatchedOffset() int64 { return s.disp.from.Load() }

// WaitDispatched waits until every record readable when it was called is
// dispatched, or timeout passes; it reports whether dispatch caught up.
func (s *MessageStore) WaitDispatched(timeout time.Duration) bool {
	return s.disp.waitFor(s.cl.MaxOffset(), timeout)
}

// waitFor waits until the reput offset reaches target, or timeout passes;
// it reports whether it did.
func (d *dispatcher) waitFor(target int64, timeout time.Duration) bool {
	d.waiters.Add(1)
	defer d.waiters.Add(-1)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.advancedMu.Lock()
		ch := d.advanced
		d.advancedMu.Unlock()
		if d.from.Load() >= target {
			return true
		}
		d.wakeUp()
		select {
		case <-ch:
		case <-deadline.C:
			return d.from.Load() >= target
		}
	}
}
