package consumequeue

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// key names one queue. Looking it up with a caller's string does not
// allocate.
type key struct {
	topic string
	id    int32
}

// Table holds every ConsumeQueue of a store (RocketMQ's consumeQueueTable in
// ConsumeQueueStore). It is safe for concurrent use; the per-Queue rules in
// the package doc still apply to the queues it hands out.
type Table struct {
	root string
	opts Options
	log  *slog.Logger

	mu     sync.RWMutex // guards queues, lazy and closed
	queues map[key]*Queue
	closed bool
	// lazy are the queues a clean shutdown's summary names that no one
	// has used since OpenTableLazy: opened on first use (see open.go).
	lazy map[key]entry
	// correctMin is the last CommitLog min offset CorrectMinOffset was
	// given, -1 before; a lazy queue is corrected to it when opened.
	correctMin atomic.Int64
	// summaryOnDisk is set while the summary read at open is still on
	// disk (see dropSummaryLocked).
	summaryOnDisk bool

	// dirty are the queues Put wrote to since Flush last took them: Flush
	// visits them only, not every queue (100,000 queues, a few busy).
	dirtyMu sync.Mutex
	dirty   []*Queue
	spare   []*Queue // the array Flush last drained, for reuse
}

// OpenTable opens every queue found in root as {topic}/{queueId} folders
// (creating root if needed), recovering each as Open does. Folders whose
// name is not a queue id (a canonical non-negative int32) are skipped.
func OpenTable(root string, opts Options) (*Table, error) {
	return OpenTableLazy(root, opts, false)
}

// OpenTableLazy opens the table as OpenTable does, except that when clean
// (the store shut down cleanly: no abort marker) and root holds a whole
// summary (WriteSummary), it opens no queue: the summary says which there
// are and where they end, and each is opened on first use. The summary
// is removed, durably, before the table first writes; after a crash it
// is neither read nor removed.
func OpenTableLazy(root string, opts Options, clean bool) (*Table, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("consumequeue: open table %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("consumequeue: open table: %w", err)
	}
	t := &Table{root: root, opts: opts, log: opts.Logger, queues: make(map[key]*Queue)}
	t.correctMin.Store(-1)
	var sum map[key]entry
	var err error
	if clean {
		// After a crash the summary is left alone (the disk unchanged by a
		// refused open): the abort marker stays until a clean Close, which
		// writes a new one first.
		if sum, err = t.readSummary(); err != nil {
			return nil, fmt.Errorf("consumequeue: open table %s: %w", root, err)
		}
	}
	if sum != nil {
		t.lazy = sum
		t.log.Info("consume queues known from the summary, opened on first use", "root", root, "queues", len(sum))
		return t, nil
	}
	topics, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open table: %w", err)
	}
	var keys []key
	for _, te := range topics {
		if !te.IsDir() {
			continue
		}
		ids, err := os.ReadDir(filepath.Join(root, te.Name()))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("consumequeue: open table: %w", err), t.Close())
		}
		for _, ie := range ids {
			id, ok := parseQueueID(ie.Name())
			if !ie.IsDir() || !ok {
				t.log.Warn("skipping a folder that is not a queue id", "path", filepath.Join(root, te.Name(), ie.Name()))
				continue
			}
			keys = append(keys, key{te.Name(), id})
		}
	}
	if err := t.openAll(keys); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	t.log.Info("consume queues loaded", "root", root, "queues", len(t.queues))
	return t, nil
}

// openWorkers is how many queues OpenTable opens at a time: opening one is
// a few system calls that wait on the filesystem more than on a core.
const openWorkers = 8

// openAll opens the queues of keys, openWorkers at a time, into the table.
func (t *Table) openAll(keys []key) error {
	qs := make([]*Queue, len(keys))
	errs := make([]error, len(keys))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(openWorkers, len(keys)) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				if qs[i], errs[i] = t.open(keys[i].topic, keys[i].id); errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for i, q := range qs {
		if q != nil {
			t.queues[keys[i]] = q
		}
	}
	return errors.Join(errs...)
}

// parseQueueID accepts only the form strconv.Itoa writes, so that two
// folders never name the same queue.
func parseQueueID(name string) (int32, bool) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != name {
		return 0, false
	}
	return int32(id), true
}

// Root is the folder holding every topic's queues.
func (t *Table) Root() string { return t.root }

// Get returns the queue of topic and queueID, or nil if there is none,
// opening it first if the summary named it and no one used it yet. It
// does not allocate once the queue is open.
func (t *Table) Get(topic string, queueID int32) *Queue {
	t.mu.RLock()
	q := t.queues[key{topic, queueID}]
	lazy := q == nil && len(t.lazy) > 0
	t.mu.RUnlock()
	if lazy {
		q = t.openLazy(topic, queueID)
	}
	return q
}

// GetOrCreate returns the queue of topic and queueID, opening (and so
// creating) it if needed (findOrCreateConsumeQueue).
func (t *Table) GetOrCreate(topic string, queueID int32) (*Queue, error) {
	if q := t.Get(topic, queueID); q != nil {
		return q, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if topic == SummaryName {
		return nil, fmt.Errorf("consumequeue: topic %q: %w", topic, ErrBadName)
	}
	k := key{topic, queueID}
	if q := t.queues[k]; q != nil {
		return q, nil
	}
	if _, ok := t.lazy[k]; ok {
		return nil, fmt.Errorf("consumequeue: %s/%d could not be opened", topic, queueID)
	}
	if err := t.dropSummaryLocked(); err != nil {
		return nil, err
	}
	q, err := t.open(topic, queueID)
	if err != nil {
		return nil, err
	}
	t.queues[k] = q
	return q, nil
}

// openLazy opens the queue of topic and queueID if the summary named it
// and it is not open yet, and returns it (nil if there is no such queue,
// or opening failed: logged, the queue stays to open at the next use).
func (t *Table) openLazy(topic string, queueID int32) *Queue {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key{topic, queueID}
	if q := t.queues[k]; q != nil || t.closed {
		return q
	}
	e, ok := t.lazy[k]
	if !ok {
		return nil
	}
	k.topic = strings.Clone(topic) // the caller's string may be a view of a buffer
	err := t.dropSummaryLocked()
	var q *Queue
	if err == nil {
		q, err = t.open(k.topic, queueID)
	}
	if err != nil {
		t.log.Error("opening a consume queue on first use failed", "topic", topic, "queueId", queueID, "err", err)
		return nil
	}
	t.adopt(k, e, q)
	return q
}

// adopt moves the lazy queue k, now open as q, into the open queues,
// correcting its min offset as recovery did the others'. t.mu is held.
func (t *Table) adopt(k key, e entry, q *Queue) {
	delete(t.lazy, k)
	if m := t.correctMin.Load(); m >= 0 {
		q.CorrectMinOffset(m)
	}
	if q.MaxOffset() != e.max || q.MaxPhysicOffset() != e.maxPhys {
		t.log.Warn("a consume queue's files disagree with the summary of the last shutdown", "topic", k.topic, "queueId", k.id,
			"maxOffset", q.MaxOffset(), "summaryMaxOffset", e.max, "maxPhysicOffset", q.MaxPhysicOffset(), "summaryMaxPhysicOffset", e.maxPhys)
	}
	t.queues[k] = q
}

// openLazyWhere opens, openWorkers at a time, the lazy queues for which
// want is true.
func (t *Table) openLazyWhere(want func(entry) bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.lazy) == 0 {
		return nil
	}
	var keys []key
	for k, e := range t.lazy {
		if want(e) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := t.dropSummaryLocked(); err != nil {
		return err
	}
	err := t.openAll(keys)
	for _, k := range keys {
		if q := t.queues[k]; q != nil {
			t.adopt(k, t.lazy[k], q)
		}
	}
	return err
}

// Lazy is how many queues the summary named that are not open yet.
func (t *Table) Lazy() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.lazy)
}

// EachMaxOffset calls fn with the topic, queue id and MaxOffset of every
// queue, open or not (recovery's queue offset table), in no order. fn
// must not call the table.
func (t *Table) EachMaxOffset(fn func(topic string, queueID int32, maxOffset int64)) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k, q := range t.queues {
		fn(k.topic, k.id, q.MaxOffset())
	}
	for k, e := range t.lazy {
		fn(k.topic, k.id, e.max)
	}
}

// open opens a queue of the table: its Puts mark it dirty in the table.
func (t *Table) open(topic string, queueID int32) (*Queue, error) {
	q, err := Open(t.root, topic, queueID, t.opts)
	if err != nil {
		return nil, err
	}
	q.onDirty = t.markDirty
	return q, nil
}

// markDirty adds q, which has units to flush, to the queues Flush visits.
func (t *Table) markDirty(q *Queue) {
	t.dirtyMu.Lock()
	t.dirty = append(t.dirty, q)
	t.dirtyMu.Unlock()
}

// Budget is the mapping budget the table's files share (see
// Options.MaxMappedFiles), nil when there is none.
func (t *Table) Budget() *mappedfile.MapBudget { return t.opts.budget }

// Dirty is how many queues wait for Flush.
func (t *Table) Dirty() int {
	t.dirtyMu.Lock()
	defer t.dirtyMu.Unlock()
	return len(t.dirty)
}

// All returns every queue, sorted by topic and queue id, opening those not
// open yet. The slice is the caller's; the queues are shared.
func (t *Table) All() []*Queue {
	if err := t.openLazyWhere(func(entry) bool { return true }); err != nil {
		t.log.Error("opening the consume queues failed", "err", err)
	}
	return t.opened()
}

// opened returns the open queues, sorted by topic and queue id.
func (t *Table) opened() []*Queue {
	t.mu.RLock()
	all := make([]*Queue, 0, len(t.queues))
	for _, q := range t.queues {
		all = append(all, q)
	}
	t.mu.RUnlock()
	slices.SortFunc(all, func(a, b *Queue) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.queueID) - int(b.queueID)
	})
	return all
}

// Truncate truncates every queue at phyOffset (Queue.Truncate); recovery
// only. A queue not open yet is opened only if the summary says it holds
// units at or past phyOffset.
func (t *Table) Truncate(phyOffset int64) error {
	err := t.openLazyWhere(func(e entry) bool { return e.maxPhys > phyOffset })
	for _, q := range t.opened() {
		err = errors.Join(err, q.Truncate(phyOffset))
	}
	return err
}

// DeleteExpired runs Queue.DeleteExpired on every queue and returns how
// many files were deleted in all. A queue not open yet is passed over
// when the summary says its head is still in the CommitLog (at or above
// minPhyOffset), or it has no unit. RocketMQ pauses 100 ms after each
// queue that deleted files; a caller that wants that pacing loops over All.
func (t *Table) DeleteExpired(minPhyOffset int64) (int, error) {
	err := t.openLazyWhere(func(e entry) bool { return e.max > 0 && e.headPhys < minPhyOffset })
	total := 0
	for _, q := range t.opened() {
		n, qerr := q.DeleteExpired(minPhyOffset)
		total += n
		err = errors.Join(err, qerr)
	}
	return total, err
}

// CorrectMinOffset runs Queue.CorrectMinOffset on every open queue, as
// recovery does with the CommitLog's min offset; a queue not open yet is
// corrected when opened.
func (t *Table) CorrectMinOffset(minPhyOffset int64) {
	for {
		old := t.correctMin.Load()
		if old >= minPhyOffset || t.correctMin.CompareAndSwap(old, minPhyOffset) {
			break
		}
	}
	for _, q := range t.opened() {
		q.CorrectMinOffset(minPhyOffset)
	}
}

// Flush flushes the queues written since the last Flush (Queue.Flush)
// and joins the errors: its work is in proportion to the queues written,
// not to all queues. A queue it leaves with units to flush (fewer than
// leastPages pages waited, or its flush failed) stays on the list.
func (t *Table) Flush(leastPages int) error {
	t.dirtyMu.Lock()
	qs := t.dirty
	t.dirty, t.spare = t.spare[:0], nil
	t.dirtyMu.Unlock()
	var err error
	if leastPages == 0 && len(qs) > syncFSAbove && t.plainFiles() {
		err = t.syncAll(qs)
	}
	for i, q := range qs {
		q.dirty.Store(false) // a Put from here on marks it again
		err = errors.Join(err, q.Flush(leastPages))
		if (q.tailN.Load() > 0 || q.files.FlushedWhere() < q.files.MaxWrotePosition()) && q.dirty.CompareAndSwap(false, true) {
			t.markDirty(q)
		}
		qs[i] = nil
	}
	t.dirtyMu.Lock()
	if t.spare == nil {
		t.spare = qs[:0]
	}
	t.dirtyMu.Unlock()
	return err
}

// syncFSAbove is how many queues a full flush syncs one by one; past it,
// one syncfs(2) makes them all durable: at 100,000 queues written since
// the last flush, one fsync each would take minutes on a slow disk.
const syncFSAbove = 64

// plainFiles reports whether the table's files are written through the
// page cache (mmap, pwrite), which a syncfs makes durable.
func (t *Table) plainFiles() bool {
	m, ok := t.opts.Mapper.(mappedfile.MmapMapper)
	return t.opts.Mapper == nil || ok && !m.HugePages
}

// syncAll writes out the tails of qs, makes the filesystem durable with
// one syncfs and marks what the queues held before it flushed; the
// per-queue flushes that follow then have nothing left to do.
func (t *Table) syncAll(qs []*Queue) error {
	var err error
	ends := make([]int64, len(qs))
	for i, q := range qs {
		err = errors.Join(err, q.writeTail())
		ends[i] = q.files.MaxWrotePosition()
	}
	if serr := mappedfile.SyncFS(t.root); serr != nil {
		return errors.Join(err, serr) // the queues flush one by one below
	}
	for i, q := range qs {
		q.files.MarkFlushed(ends[i])
	}
	return err
}

// MaxPhysicOffset is the largest MaxPhysicOffset of all queues, -1 when no
// queue has a unit (getMaxPhyOffsetInConsumeQueue).
func (t *Table) MaxPhysicOffset() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := int64(-1)
	for _, q := range t.queues {
		m = max(m, q.MaxPhysicOffset())
	}
	for _, e := range t.lazy {
		m = max(m, e.maxPhys)
	}
	return m
}

// RebuildFrom is the smallest Queue.RebuildFrom of all queues: the
// CommitLog offset from which dispatch must run again to rebuild the queues
// Open found damaged; -1 when none was.
func (t *Table) RebuildFrom() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := int64(-1)
	for _, q := range t.queues {
		if r := q.RebuildFrom(); r >= 0 && (m < 0 || r < m) {
			m = r
		}
	}
	return m
}

// Remove destroys every queue of topic and deletes the topic's folder
// (deleteTopics). Nothing may write to those queues any more.
func (t *Table) Remove(topic string) error {
	if err := checkName(topic, 0); err != nil {
		return err
	}
	t.mu.Lock()
	if err := t.dropSummaryLocked(); err != nil {
		t.mu.Unlock()
		return err
	}
	var doomed []*Queue
	for k, q := range t.queues {
		if k.topic == topic {
			doomed = append(doomed, q)
			delete(t.queues, k)
		}
	}
	for k := range t.lazy {
		if k.topic == topic {
			delete(t.lazy, k)
		}
	}
	t.mu.Unlock()
	var err error
	for _, q := range doomed {
		err = errors.Join(err, q.Destroy())
	}
	if rerr := os.RemoveAll(filepath.Join(t.root, topic)); rerr != nil {
		err = errors.Join(err, fmt.Errorf("consumequeue: remove topic %s: %w", topic, rerr))
	}
	t.log.Info("removed topic's consume queues", "topic", topic, "queues", len(doomed))
	return err
}

// Close closes every queue without flushing. Calls after the first return
// ErrClosed.
func (t *Table) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	t.closed = true
	qs := make([]*Queue, 0, len(t.queues))
	for _, q := range t.queues {
		qs = append(qs, q)
	}
	t.mu.Unlock()
	var err error
	for _, q := range qs {
		if qerr := q.Close(); qerr != nil && !errors.Is(qerr, ErrClosed) {
			err = errors.Join(err, qerr)
		}
	}
	return err
}
