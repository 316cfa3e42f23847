package mappedfile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
)

// QueueOptions says how a Queue makes its files. The zero value works.
type QueueOptions struct {
	// Mapper maps files; nil means MmapMapper.
	Mapper Mapper
	// Pool, if not nil, lends new files a write buffer (transientStorePoolEnable).
	Pool *TransientStorePool
	// Preallocate creates the next file in the background as soon as a new
	// one is taken, as RocketMQ's AllocateMappedFileService does.
	Preallocate bool
	// Warm faults in the pages of each new file (warmMapedFileEnable), in
	// the background: a file made ahead is warmed before it is taken; one
	// made on the writer's path is warmed behind the writer.
	Warm bool
	// Sparse makes new files as holes, their disk allocated ahead of the
	// writer by File.Reserve (see FileOptions.Sparse); nothing warms them.
	Sparse bool
	// Budget, if not nil, maps the files only while they are used (see
	// MapBudget and FileOptions.Budget).
	Budget *MapBudget
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

// fileOptions are the options of the queue's files.
func (o QueueOptions) fileOptions(pool bool) FileOptions {
	fo := FileOptions{Mapper: o.Mapper, Sparse: o.Sparse, Budget: o.Budget}
	if pool {
		fo.Pool = o.Pool
	}
	return fo
}

// Queue is a run of Files of one size in one folder, each named by the
// offset of its first byte (RocketMQ's MappedFileQueue). Offsets given to and
// returned by a Queue are offsets in the whole run.
//
// One writer grows the queue (LastOrCreate, Truncate); readers, one flusher
// and one committer may run at the same time.
type Queue struct {
	dir      string
	fileSize int
	opts     QueueOptions
	log      *slog.Logger

	// files are the queue's files in order, copy-on-write: a published
	// slice never changes, so readers (every append, read and dispatch
	// looks up a file) take no lock. mu serialises the writers.
	mu    sync.Mutex
	files atomic.Pointer[[]*File]

	flushedWhere   atomic.Int64
	committedWhere atomic.Int64

	allocMu sync.Mutex // guards next
	next    *pendingFile
	wg      sync.WaitGroup
	closed  atomic.Bool
}

// pendingFile is a file being made in the background.
type pendingFile struct {
	from int64
	done chan struct{}
	f    *File // set before done is closed
	err  error
}

// OpenQueue opens the folder dir (creating it if needed) and maps every file
// in it. Files must be named by their start offsets, be exactly fileSize bytes
// and follow each other without gaps; an empty last file is deleted, as
// RocketMQ does. Loaded files count as fully written until Truncate.
func OpenQueue(dir string, fileSize int, opts QueueOptions) (*Queue, error) {
	if fileSize <= 0 || fileSize%pageSize != 0 && fileSize%20 != 0 {
		return nil, fmt.Errorf("mappedfile: queue %s: file size %d must be positive", dir, fileSize)
	}
	q := &Queue{dir: dir, fileSize: fileSize, opts: opts, log: opts.Logger}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	if err := q.load(); err != nil {
		return nil, errors.Join(err, q.closeFiles())
	}
	return q, nil
}

func (q *Queue) load() error {
	entries, err := os.ReadDir(q.dir)
	if errors.Is(err, os.ErrNotExist) {
		// A new queue (an existing one costs no extra stat: 100,000 queues).
		if err := os.MkdirAll(q.dir, 0o755); err != nil {
			return fmt.Errorf("mappedfile: queue: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("mappedfile: queue: %w", err)
	}
	type named struct {
		name string
		from int64
		size int64
	}
	var found []named
	for _, e := range entries {
		from, err := ParseFileName(e.Name())
		if err != nil || e.IsDir() {
			continue // not ours (e.g. a left-over temp file)
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("mappedfile: queue: %w", err)
		}
		found = append(found, named{e.Name(), from, info.Size()})
	}
	for i, e := range found {
		path := filepath.Join(q.dir, e.name)
		if e.size == 0 && i == len(found)-1 {
			q.log.Warn("deleting empty last file", "file", path)
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("mappedfile: queue: %w", err)
			}
			continue
		}
		from := e.from
		if i == len(found)-1 && e.size < int64(q.fileSize) {
			// A torn last file (its tail never reached the disk): give it its
			// size back; recovery cuts it at its last whole record.
			q.log.Warn("growing a short last file to its size", "file", path, "size", e.size)
			if err := os.Truncate(path, int64(q.fileSize)); err != nil {
				return fmt.Errorf("mappedfile: queue: %w", err)
			}
			e.size = int64(q.fileSize)
		}
		files := q.list()
		if n := len(files); n > 0 && files[n-1].from+int64(q.fileSize) != from {
			return fmt.Errorf("mappedfile: queue %s: %s does not follow %s: %w",
				q.dir, e.name, filepath.Base(files[n-1].path), ErrGap)
		}
		f, err := openSized(path, from, q.fileSize, e.size, q.opts.fileOptions(false))
		if err != nil {
			return err
		}
		q.publish(append(slices.Clip(files), f))
	}
	if files := q.list(); len(files) > 0 {
		end := files[len(files)-1].from + int64(q.fileSize)
		q.flushedWhere.Store(end)
		q.committedWhere.Store(end)
	}
	return nil
}

// ErrGap reports files of a queue that do not follow each other.
var ErrGap = errors.New("mappedfile: gap between files")

// Dir is the queue's folder.
func (q *Queue) Dir() string { return q.dir }

// FileSize is the size of each file.
func (q *Queue) FileSize() int { return q.fileSize }

// Files returns the files in order. The slice is a copy; the Files are shared.
func (q *Queue) Files() []*File { return slices.Clone(q.list()) }

// list is the published file list; do not change it.
func (q *Queue) list() []*File {
	if p := q.files.Load(); p != nil {
		return *p
	}
	return nil
}

// publish makes files the file list. files must not share an array with
// the list it replaces (readers may still hold that one).
func (q *Queue) publish(files []*File) { q.files.Store(&files) }

// First returns the first file, or nil.
func (q *Queue) First() *File {
	files := q.list()
	if len(files) == 0 {
		return nil
	}
	return files[0]
}

// Last returns the last file, or nil.
func (q *Queue) Last() *File {
	files := q.list()
	if len(files) == 0 {
		return nil
	}
	return files[len(files)-1]
}

// MinOffset is the start of the first file, or -1 when the queue is empty.
func (q *Queue) MinOffset() int64 {
	if f := q.First(); f != nil {
		return f.from
	}
	return -1
}

// MaxOffset is the readable end of the last file (RocketMQ's getMaxOffset):
// 0 when the queue is empty. With pool buffers, earlier full files may still
// wait for Commit.
func (q *Queue) MaxOffset() int64 {
	if f := q.Last(); f != nil {
		return f.from + int64(f.ReadPosition())
	}
	return 0
}

// MaxWrotePosition is the written end of the queue: 0 when it is empty.
func (q *Queue) MaxWrotePosition() int64 {
	if f := q.Last(); f != nil {
		return f.from + int64(f.WrotePosition())
	}
	return 0
}

// FlushedWhere is the offset up to which the queue is durable.
func (q *Queue) FlushedWhere() int64 { return q.flushedWhere.Load() }

// CommittedWhere is the offset up to which pool buffers are in the mappings.
func (q *Queue) CommittedWhere() int64 { return q.committedWhere.Load() }

// SetFlushedWhere sets the durable offset, as recovery does.
func (q *Queue) SetFlushedWhere(off int64) {
	q.flushedWhere.Store(off)
	q.committedWhere.Store(off)
}

// FindByOffset returns the file that holds offset, or nil.
func (q *Queue) FindByOffset(offset int64) *File {
	files := q.list()
	if len(files) == 0 || offset < files[0].from {
		return nil
	}
	i := (offset - files[0].from) / int64(q.fileSize)
	if i >= int64(len(files)) {
		return nil
	}
	return files[i]
}

// LastOrCreate returns the last file if it has room, else a new file after
// it; an empty queue starts with a file holding startOffset. Only the writer
// may call it.
func (q *Queue) LastOrCreate(startOffset int64) (*File, error) {
	last := q.Last()
	var from int64
	switch {
	case last == nil:
		from = startOffset - startOffset%int64(q.fileSize)
	case !last.IsFull():
		return last, nil
	default:
		from = last.from + int64(q.fileSize)
	}
	if q.closed.Load() {
		return nil, ErrClosed
	}
	f, err := q.takeFile(from)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.publish(append(slices.Clip(q.list()), f))
	q.mu.Unlock()
	return f, nil
}

// takeFile returns a new file at from: the one made in the background if it
// is for from, else one made now. It then starts making the next one.
func (q *Queue) takeFile(from int64) (*File, error) {
	var f *File
	q.allocMu.Lock()
	p := q.next
	q.next = nil
	q.allocMu.Unlock()
	if p != nil {
		<-p.done
		switch {
		case p.err == nil && p.from == from:
			f = p.f
		case p.err == nil:
			if err := p.f.Destroy(); err != nil {
				q.log.Warn("dropping an unused preallocated file failed", "file", p.f.path, "err", err)
			}
		default:
			q.log.Warn("preallocating a file failed; creating it inline", "err", p.err)
		}
	}
	var warmRest *File
	if f == nil {
		// Made now, on the writer's path: not warmed here (faulting in a
		// 1 GiB file takes seconds), but in the background below.
		var err error
		if f, err = q.newFile(from, false); err != nil {
			return nil, err
		}
		if q.opts.Warm {
			warmRest = f
		}
	}
	switch {
	case q.opts.Preallocate:
		q.preallocate(warmRest, from+int64(q.fileSize), q.opts.Warm)
	case warmRest != nil:
		q.wg.Go(func() { warmRest.warmFrom(0, &q.closed) })
	}
	return f, nil
}

// PrepareNext faults in the rest of the last file and then makes, warmed,
// the file after it, in the background, unless a file is being made
// already: the writer then stops neither for page faults nor for the
// roll-over. A queue without Preallocate calls it once its writer is some
// way into the last file, so that the files of queues that fill slowly
// are neither warmed nor made before they are needed. Only the writer may
// call it.
func (q *Queue) PrepareNext() {
	last := q.Last()
	if last == nil || q.closed.Load() {
		return
	}
	q.allocMu.Lock()
	pending := q.next != nil
	q.allocMu.Unlock()
	if !pending {
		q.preallocate(last, last.from+int64(q.fileSize), true)
	}
}

// WaitAllocated blocks until the file being made in the background, if
// any, is ready: at start-up, so the first roll-over does not wait for it.
func (q *Queue) WaitAllocated() {
	q.allocMu.Lock()
	p := q.next
	q.allocMu.Unlock()
	if p != nil {
		<-p.done
	}
}

// preallocate starts making the file at from in the background, warmed if
// warm is set, after faulting in the unwritten rest of last if not nil.
func (q *Queue) preallocate(last *File, from int64, warm bool) {
	p := &pendingFile{from: from, done: make(chan struct{})}
	q.allocMu.Lock()
	q.next = p
	q.allocMu.Unlock()
	q.wg.Go(func() {
		defer close(p.done)
		if last != nil {
			last.warmFrom(last.WrotePosition(), &q.closed)
		}
		p.f, p.err = q.newFile(from, false)
		if p.err == nil && warm {
			p.f.warmFrom(0, &q.closed)
		}
	})
}

// newFile creates the file at from, warmed if warm is set.
func (q *Queue) newFile(from int64, warm bool) (*File, error) {
	path := filepath.Join(q.dir, FileName(from))
	f, err := Create(path, from, q.fileSize, q.opts.fileOptions(true))
	if err != nil {
		return nil, err
	}
	if warm {
		if err := f.Warm(); err != nil {
			return nil, errors.Join(err, f.Destroy())
		}
	}
	return f, nil
}

// Commit copies pool buffers into the mappings, file by file from
// CommittedWhere, when at least leastPages pages wait (see File.Commit).
// It returns the new committed offset.
func (q *Queue) Commit(leastPages int) int64 {
	where := q.committedWhere.Load()
	for {
		f := q.FindByOffset(where)
		if f == nil {
			if first := q.First(); first != nil && where < first.from {
				where = first.from // the head was deleted
				continue
			}
			return where
		}
		end := f.from + int64(f.Commit(leastPages))
		q.committedWhere.Store(end)
		if end < f.from+int64(f.size) || end == where {
			return end
		}
		where = end
	}
}

// Flush makes the queue durable from FlushedWhere on, file by file, when at
// least leastPages pages wait (see File.Flush), and returns the new flushed
// offset.
func (q *Queue) Flush(leastPages int) (int64, error) {
	where := q.flushedWhere.Load()
	for {
		f := q.FindByOffset(where)
		if f == nil {
			if first := q.First(); first != nil && where < first.from {
				where = first.from
				continue
			}
			return where, nil
		}
		pos, err := f.Flush(leastPages)
		end := f.from + int64(pos)
		if end > where {
			q.flushedWhere.Store(end)
		}
		if err != nil || end < f.from+int64(f.size) || end == where {
			return end, err
		}
		where = end
	}
}

// Truncate drops everything at and after offset: later files are deleted,
// and the file holding offset is cut there, its tail zeroed. A file being
// made in the background that no longer follows the last one is deleted
// too, so no gap is left on disk. Only the writer may call it.
func (q *Queue) Truncate(offset int64) error {
	err := q.truncate(offset, true)
	return errors.Join(err, q.dropStalePending())
}

// SetEnd is Truncate for a queue whose bytes from offset on are known to
// be zero (recovery found them so): the file holding offset only gets its
// positions set, with nothing zeroed or given back, so that opening a
// queue costs no write. Only the writer may call it.
func (q *Queue) SetEnd(offset int64) error {
	err := q.truncate(offset, false)
	return errors.Join(err, q.dropStalePending())
}

// dropStalePending deletes the file being made in the background unless it
// follows the last file.
func (q *Queue) dropStalePending() error {
	last := q.Last()
	q.allocMu.Lock()
	p := q.next
	if p == nil || last != nil && p.from == last.from+int64(q.fileSize) {
		q.allocMu.Unlock()
		return nil
	}
	q.next = nil
	q.allocMu.Unlock()
	<-p.done
	if p.err != nil {
		return nil
	}
	return p.f.Destroy()
}

func (q *Queue) truncate(offset int64, zero bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var err error
	var keep []*File
	for _, f := range q.list() {
		switch end := f.from + int64(f.size); {
		case end <= offset:
			keep = append(keep, f)
		case f.from <= offset && offset < end && zero:
			err = errors.Join(err, f.Truncate(int(offset-f.from)))
			keep = append(keep, f)
		case f.from <= offset && offset < end:
			f.SetPosition(int(offset - f.from))
			keep = append(keep, f)
		default:
			q.log.Info("deleting file past the end of valid data", "file", f.path, "end", offset)
			err = errors.Join(err, f.Destroy())
		}
	}
	q.publish(keep)
	if q.flushedWhere.Load() > offset {
		q.flushedWhere.Store(offset)
	}
	if q.committedWhere.Load() > offset {
		q.committedWhere.Store(offset)
	}
	return err
}

// ErrNotEmpty refuses to restart a queue that holds data.
var ErrNotEmpty = errors.New("mappedfile: the queue holds data")

// Restart deletes the files of a queue that holds no data (nothing was
// written to any of them), and the file being made in the background, so
// that the next LastOrCreate starts the queue at from: a slave's empty
// CommitLog takes its master's, which no longer starts at 0. Only the
// writer may call it.
func (q *Queue) Restart(from int64) error {
	q.mu.Lock()
	files := q.list()
	for _, f := range files {
		if f.WrotePosition() != 0 {
			q.mu.Unlock()
			return fmt.Errorf("mappedfile: restart %s at %d: file %s has %d bytes: %w",
				q.dir, from, f.path, f.WrotePosition(), ErrNotEmpty)
		}
	}
	q.publish(nil)
	q.flushedWhere.Store(from)
	q.committedWhere.Store(from)
	q.mu.Unlock()
	var err error
	for _, f := range files {
		err = errors.Join(err, f.Destroy())
	}
	return errors.Join(err, q.dropStalePending())
}

// DeleteHead deletes files from the head of the queue while del says so,
// never the last file and at most max files (0: no limit). It returns how
// many it deleted.
func (q *Queue) DeleteHead(del func(f *File) bool, max int) (int, error) {
	q.mu.Lock()
	files := q.list()
	n := 0
	for n < len(files)-1 && (max <= 0 || n < max) && del(files[n]) {
		n++
	}
	doomed := files[:n]
	q.publish(slices.Clone(files[n:]))
	q.mu.Unlock()
	// Destroy outside the lock: its directory fsync must not block readers,
	// and readers that found a doomed file hold their own reference.
	var err error
	for _, f := range doomed {
		q.log.Info("deleting head file", "file", f.path)
		err = errors.Join(err, f.Destroy())
	}
	return n, err
}

// Close stops background allocation, deletes a preallocated file not taken,
// and closes every file. It does not flush. Calls after the first return
// ErrClosed.
func (q *Queue) Close() error {
	if !q.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	q.wg.Wait()
	var err error
	q.allocMu.Lock()
	if p := q.next; p != nil && p.f != nil {
		err = p.f.Destroy()
	}
	q.next = nil
	q.allocMu.Unlock()
	return errors.Join(err, q.closeFiles())
}

func (q *Queue) closeFiles() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var err error
	for _, f := range q.list() {
		err = errors.Join(err, f.Close())
	}
	q.publish(nil)
	return err
}

// MarkFlushed records that the queue's bytes up to end were made durable
// by other means (a syncfs(2) of the whole filesystem after they were
// written), as Flush would after flushing them.
func (q *Queue) MarkFlushed(end int64) {
	for _, f := range q.list() {
		if f.from >= end {
			break
		}
		f.markFlushed(int(min(end-f.from, int64(f.size))))
	}
	if end > q.flushedWhere.Load() {
		q.flushedWhere.Store(end)
	}
}
