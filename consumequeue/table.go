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

	mu     sync.RWMutex // guards queues and closed
	queues map[key]*Queue
	closed bool

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
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("consumequeue: open table %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("consumequeue: open table: %w", err)
	}
	t := &Table{root: root, opts: opts, log: opts.Logger, queues: make(map[key]*Queue)}
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

// Get returns the queue of topic and queueID, or nil if there is none.
// It does not allocate.
func (t *Table) Get(topic string, queueID int32) *Queue {
	t.mu.RLock()
	q := t.queues[key{topic, queueID}]
	t.mu.RUnlock()
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
	k := key{topic, queueID}
	if q := t.queues[k]; q != nil {
		return q, nil
	}
	q, err := t.open(topic, queueID)
	if err != nil {
		return nil, err
	}
	t.queues[k] = q
	return q, nil
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

// All returns every queue, sorted by topic and queue id. The slice is the
// caller's; the queues are shared.
func (t *Table) All() []*Queue {
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
// only.
func (t *Table) Truncate(phyOffset int64) error {
	var err error
	for _, q := range t.All() {
		err = errors.Join(err, q.Truncate(phyOffset))
	}
	return err
}

// DeleteExpired runs Queue.DeleteExpired on every queue and returns how
// many files were deleted in all. RocketMQ pauses 100 ms after each queue
// that deleted files; a caller that wants that pacing loops over All.
func (t *Table) DeleteExpired(minPhyOffset int64) (int, error) {
	var err error
	total := 0
	for _, q := range t.All() {
		n, qerr := q.DeleteExpired(minPhyOffset)
		total += n
		err = errors.Join(err, qerr)
	}
	return total, err
}

// CorrectMinOffset runs Queue.CorrectMinOffset on every queue, as recovery
// does with the CommitLog's min offset.
func (t *Table) CorrectMinOffset(minPhyOffset int64) {
	for _, q := range t.All() {
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
	var doomed []*Queue
	for k, q := range t.queues {
		if k.topic == topic {
			doomed = append(doomed, q)
			delete(t.queues, k)
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
