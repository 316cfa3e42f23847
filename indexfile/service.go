package indexfile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// nameLen is the length of an index file name, yyyyMMddHHmmssSSS.
const nameLen = 17

// Service is the run of index files in one folder (RocketMQ's IndexService):
// it indexes each dispatched message under its UNIQ_KEY and KEYS, and
// answers queries by key and time range.
//
// It is safe for concurrent use: Puts (the dispatcher's) are serialized,
// and any number of Queries, DeleteExpired and Flush run alongside them
// without waiting for a Put, except while it starts a new file.
type Service struct {
	dir  string
	opts Options
	log  *slog.Logger

	putMu    sync.Mutex // serializes Put, DropAfter and shutdown; guards lastName and floor
	lastName string     // the greatest file name seen, so new names sort after it
	// floor is the greatest endPhyOffset of the files found by Open or
	// kept by DropAfter. Put skips offsets below it even if the newest file
	// is an empty one whose header a crash lost (endPhyOffset 0).
	floor int64
	// touched keeps the slot reads of PutBatch from being optimized away.
	touched uint32

	mu    sync.RWMutex // guards files; a Query holds it for reading throughout
	files []*File      // oldest first
	last  atomic.Pointer[File]

	full   chan *File   // full files for flushLoop, each with a reference held
	warm   chan warmJob // for warmLoop
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Open opens the index folder dir (creating it if needed) and maps every
// index file in it, oldest first. All files must have the size that
// opts.HashSlots and opts.MaxIndexes give. Files of an interrupted creation
// are deleted; other names that are not 17 digits are logged and ignored.
// After a crash, call DropAfter before the first Put.
func Open(dir string, opts Options) (*Service, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("indexfile: open %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("indexfile: open: %w", err)
	}
	s := &Service{dir: dir, opts: opts, log: opts.Logger, full: make(chan *File, 4), warm: make(chan warmJob, 4)}
	if err := s.load(); err != nil {
		for _, f := range s.files {
			err = errors.Join(err, f.Close())
		}
		return nil, err
	}
	s.wg.Go(s.flushLoop)
	s.wg.Go(s.warmLoop)
	return s, nil
}

// load maps the files of s.dir in name order.
func (s *Service) load() error {
	entries, err := os.ReadDir(s.dir) // sorted by name
	if err != nil {
		return fmt.Errorf("indexfile: open: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(s.dir, name)
		base, unfinished := strings.CutSuffix(name, mappedfile.CreatingSuffix)
		switch {
		case unfinished && isFileName(base) && e.Type().IsRegular():
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("indexfile: remove unfinished file: %w", err)
			}
			s.log.Warn("removed an index file whose creation was interrupted", "file", path)
		case !e.Type().IsRegular() || !isFileName(name):
			s.log.Warn("ignoring a file that is not an index file", "file", path)
		default:
			f, err := OpenFile(path, s.opts)
			if err != nil {
				return err
			}
			s.files = append(s.files, f)
			s.lastName = name
			s.log.Info("loaded index file", "file", path, "indexCount", f.IndexCount(),
				"endPhyOffset", f.EndPhyOffset(), "endTimestamp", f.EndTimestamp())
		}
	}
	if n := len(s.files); n > 0 {
		s.last.Store(s.files[n-1])
	}
	s.floor = maxEndPhyOffset(s.files)
	return nil
}

// maxEndPhyOffset is the greatest endPhyOffset of files, 0 if none.
func maxEndPhyOffset(files []*File) int64 {
	var m int64
	for _, f := range files {
		m = max(m, f.EndPhyOffset())
	}
	return m
}

// isFileName reports whether name is 17 decimal digits.
func isFileName(name string) bool {
	if len(name) != nameLen {
		return false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// Put indexes the message at CommitLog offset phyOffset
// (IndexService.buildIndex): under uniqKey (its UNIQ_KEY property) if not
// empty, then under each non-empty space-separated token of keys (its KEYS
// property), each as "topic#key".
//
// It skips a rolled-back transaction message (sysFlag's transaction bits
// are message.TxRollback) and a message whose offset is below the newest
// file's endPhyOffset, which is already indexed (or below an older file's,
// which matters only when a crash emptied the newest file). A message at
// exactly endPhyOffset is indexed again, as in RocketMQ, so that one whose
// keys straddled a full file is never lost after a crash.
//
// When the newest file is full, Put starts a new one; the full one is
// flushed in the background and then reported to Options.OnFileFull. Put
// does not allocate unless it starts a file. Calls are serialized: in a
// store the dispatcher is the one caller.
func (s *Service) Put(topic, keys, uniqKey string, phyOffset, storeTimestamp int64, sysFlag int32) (err error) {
	if !indexes(sysFlag, keys, uniqKey) {
		return nil
	}
	// Two returns: the defers stay open-coded (no defer records).
	s.putMu.Lock()
	defer s.putMu.Unlock()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // once for all the keys
	defer s.recoverFault(&err)
	return s.putKeysLocked(topic, keys, uniqKey, phyOffset, storeTimestamp)
}

// Message is one message to index with PutBatch: the arguments of Put.
type Message struct {
	Topic          string
	Keys           string // the KEYS property: keys separated by spaces
	UniqKey        string // the UNIQ_KEY property
	PhyOffset      int64
	StoreTimestamp int64
	SysFlag        int32
}

// batchKeys is how many keys PutBatch reads the hash slots of before it
// writes their entries.
const batchKeys = 64

// PutBatch indexes msgs in order, to the same bytes as Put called for each.
// It reads the hash slots of up to batchKeys keys before writing any of
// their entries: a slot read is likely a cache miss (the slot table is
// 20 MB), and each entry's write ends in a barrier that would make the
// next read wait alone. It locks and arms the fault guard once.
func (s *Service) PutBatch(msgs []Message) (err error) {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverFault(&err)
	if len(msgs) == 1 { // nothing to read ahead of: Put's way is quicker
		if m := &msgs[0]; indexes(m.SysFlag, m.Keys, m.UniqKey) {
			return s.putKeysLocked(m.Topic, m.Keys, m.UniqKey, m.PhyOffset, m.StoreTimestamp)
		}
		return nil
	}
	return s.putBatchLocked(msgs)
}

// keyBatch holds the keys PutBatch has hashed but not yet put.
type keyBatch struct {
	n    int
	hash [batchKeys]int32
	msg  [batchKeys]int32 // the index in msgs of the message of each key
}

// putBatchLocked is PutBatch under putMu, with memory faults armed.
func (s *Service) putBatchLocked(msgs []Message) (err error) {
	if s.closed.Load() {
		return ErrClosed
	}
	f := s.last.Load()
	var b keyBatch
	// Put skips a message below the newest file's endPhyOffset: the offset
	// of the last message put, so here that of the last message batched.
	known, end := f != nil, int64(0)
	if known {
		end = f.EndPhyOffset()
	}
	for i := range msgs {
		m := &msgs[i]
		if !indexes(m.SysFlag, m.Keys, m.UniqKey) || known && m.PhyOffset < max(s.floor, end) {
			continue
		}
		th := topicHash(m.Topic)
		keys := 0
		if m.UniqKey != "" {
			if f, err = s.batchKeyLocked(f, &b, keyHashFrom(th, m.UniqKey), i, msgs); err != nil {
				return err
			}
			keys++
		}
		for key := range message.Keys(m.Keys) {
			if f, err = s.batchKeyLocked(f, &b, keyHashFrom(th, key), i, msgs); err != nil {
				return err
			}
			keys++
		}
		if keys > 0 {
			known, end = true, m.PhyOffset
		}
	}
	if f, err = s.putBatchedLocked(f, &b, msgs); err != nil {
		return err
	}
	if f != nil {
		s.warmAheadLocked(f)
	}
	return nil
}

// batchKeyLocked adds the key hash h of msgs[i] to b, putting the batch
// first when it is full.
func (s *Service) batchKeyLocked(f *File, b *keyBatch, h int32, i int, msgs []Message) (*File, error) {
	if b.n == batchKeys {
		var err error
		if f, err = s.putBatchedLocked(f, b, msgs); err != nil {
			return f, err
		}
	}
	b.hash[b.n], b.msg[b.n] = h, int32(i)
	b.n++
	return f, nil
}

// putBatchedLocked reads the slots of the keys in b, then puts them in
// order and empties b.
func (s *Service) putBatchedLocked(f *File, b *keyBatch, msgs []Message) (*File, error) {
	if f != nil {
		s.touched ^= f.touchSlots(b.hash[:b.n])
	}
	for k := range b.n {
		m := &msgs[b.msg[k]]
		var err error
		if f, err = s.putLocked(f, b.hash[k], m.PhyOffset, m.StoreTimestamp); err != nil {
			return f, err
		}
	}
	b.n = 0
	return f, nil
}

// indexes reports whether a message has keys to index and is not a
// rolled-back transaction.
func indexes(sysFlag int32, keys, uniqKey string) bool {
	return sysFlag&message.TxMask != message.TxRollback && (uniqKey != "" || keys != "")
}

// putKeysLocked is Put under putMu, with memory faults armed.
func (s *Service) putKeysLocked(topic, keys, uniqKey string, phyOffset, storeTimestamp int64) (err error) {
	if s.closed.Load() {
		return ErrClosed
	}
	f := s.last.Load()
	if f != nil && phyOffset < max(s.floor, f.EndPhyOffset()) {
		return nil
	}
	th := topicHash(topic)
	if uniqKey != "" {
		if f, err = s.putLocked(f, keyHashFrom(th, uniqKey), phyOffset, storeTimestamp); err != nil {
			return err
		}
	}
	for key := range message.Keys(keys) {
		if f, err = s.putLocked(f, keyHashFrom(th, key), phyOffset, storeTimestamp); err != nil {
			return err
		}
	}
	if f != nil {
		s.warmAheadLocked(f)
	}
	return nil
}

// warmChunk is how far ahead of Put the pages of the newest file are
// faulted in, and in what steps.
const warmChunk = 1 << 20

// warmJob asks warmLoop to fault in f.b[from:to]; it holds a reference.
type warmJob struct {
	f        *File
	from, to int
}

// warmAheadLocked asks warmLoop to fault in the pages of f that the next
// Puts write: first its hash slots, which any Put may hit, and its first
// entries; then the entries warmChunk ahead of the last one. On fresh
// memory a page fault costs microseconds, most of them the kernel zeroing
// the page: this moves them off the dispatching goroutine (RocketMQ warms
// CommitLog files, not index files). If warmLoop is behind, Put goes on
// and asks again at the next one.
func (s *Service) warmAheadLocked(f *File) {
	next := f.entries + int(f.IndexCount())*EntrySize
	if next+warmChunk <= f.warmedTo || f.warmedTo >= f.size {
		return
	}
	from, to := f.warmedTo, min(max(f.warmedTo, next)+warmChunk, f.size)
	if from == 0 {
		to = min(f.entries+warmChunk, f.size)
	}
	// Only what has disk: a page faulted in over a hole would take disk
	// the file may not get (and on tmpfs, fault when there is none).
	if to = min(to, f.allocatedTo); to <= from {
		return
	}
	if !f.mf.Hold() {
		return
	}
	select {
	case s.warm <- warmJob{f, from &^ (os.Getpagesize() - 1), to}:
		f.warmedTo = to
	default:
		_ = f.mf.Release() // not the last reference: f is the newest file
	}
}

// warmLoop faults in the pages warmAheadLocked asks for.
func (s *Service) warmLoop() {
	for j := range s.warm {
		if j.f.mf.Available() {
			_ = mappedfile.Populate(j.f.b[j.from:j.to]) // best effort: Put faults them in itself
		}
		if err := j.f.mf.Release(); err != nil {
			s.log.Error("closing an index file failed", "file", j.f.Path(), "err", err)
		}
	}
}

// recoverFault turns a memory fault inside Put into ErrFault.
func (s *Service) recoverFault(err *error) {
	if e := faultError(recover(), s.dir); e != nil {
		*err = e
	}
}

// putLocked puts one entry into f, or into a new file when f is full or
// nil, and returns the file it used.
func (s *Service) putLocked(f *File, hash int32, phyOffset, storeTimestamp int64) (*File, error) {
	if f == nil || f.IsFull() {
		var err error
		if f, err = s.rollLocked(f); err != nil {
			return nil, err
		}
	}
	return f, f.put(hash, phyOffset, storeTimestamp)
}

// rollLocked creates the next file, starting from prev's end values, and
// hands a full prev to flushLoop.
func (s *Service) rollLocked(prev *File) (*File, error) {
	var endPhyOffset, endTimestamp int64
	if prev != nil {
		endPhyOffset, endTimestamp = prev.EndPhyOffset(), prev.EndTimestamp()
	}
	name := s.nextNameLocked()
	f, err := CreateFile(filepath.Join(s.dir, name), endPhyOffset, endTimestamp, s.opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.files = append(s.files, f)
	s.last.Store(f)
	s.mu.Unlock()
	s.log.Info("created index file", "file", f.Path(), "beginPhyOffset", endPhyOffset)
	if prev != nil && prev.IsFull() && prev.mf.Hold() {
		s.full <- prev // waits if flushLoop is behind
	}
	return f, nil
}

// nextNameLocked names a new file by the time now (yyyyMMddHHmmssSSS, in
// the location of Options.Now's time: local time for time.Now), or, when
// that does not sort after every existing name (two files in one
// millisecond, or a clock that went back), by the greatest name plus one.
func (s *Service) nextNameLocked() string {
	t := s.opts.Now().Format("20060102150405.000")
	name := t[:14] + t[15:]
	if name <= s.lastName || !isFileName(name) {
		n, _ := strconv.ParseUint(s.lastName, 10, 64) // "" (no files) gives 0
		name = fmt.Sprintf("%0*d", nameLen, n+1)
	}
	s.lastName = name
	return name
}

// flushLoop flushes full files and reports them to Options.OnFileFull, in
// the order they filled.
func (s *Service) flushLoop() {
	for f := range s.full {
		var err error
		if f.mf.Available() { // not deleted meanwhile
			err = f.flushHeld()
		}
		end, path, gone := f.EndTimestamp(), f.Path(), !f.mf.Available()
		if rerr := f.mf.Release(); rerr != nil {
			s.log.Error("closing an index file failed", "file", path, "err", rerr)
		}
		switch {
		case gone:
		case err != nil:
			s.log.Error("flushing a full index file failed; the checkpoint keeps its older indexMsgTimestamp",
				"file", path, "err", err)
		default:
			s.log.Info("flushed full index file", "file", path, "endTimestamp", end)
			if s.opts.OnFileFull != nil && end > 0 {
				s.opts.OnFileFull(end)
			}
		}
	}
}

// Query returns, newest first, the CommitLog offsets of up to maxNum
// messages indexed under topic and key whose store time is in [begin, end]
// (IndexService.queryOffset). maxNum is capped at Options.MaxQueryNum.
// Files are searched newest to oldest, skipping those whose time range does
// not overlap [begin, end], and the search stops at a file that begins
// before begin. Only hashes are compared: the caller must check the key of
// each message read. The returned slice belongs to the caller.
func (s *Service) Query(topic, key string, maxNum int, begin, end int64) ([]int64, error) {
	maxNum = min(maxNum, s.opts.MaxQueryNum)
	hash := KeyHash(topic, key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if maxNum <= 0 {
		return nil, nil
	}
	out := make([]int64, 0, maxNum)
	for i := len(s.files) - 1; i >= 0; i-- {
		f := s.files[i]
		if f.TimeMatched(begin, end) {
			var err error
			if out, err = f.Select(out, hash, maxNum, begin, end); err != nil {
				return out, err
			}
		}
		if f.BeginTimestamp() < begin || len(out) >= maxNum {
			break
		}
	}
	return out, nil
}

// LastUpdate returns the newest file's endTimestamp and endPhyOffset, or
// zeros when there is no file: how far the index has got, sent in a
// QUERY_MESSAGE response as indexLastUpdateTimestamp and
// indexLastUpdatePhyoffset.
func (s *Service) LastUpdate() (timestamp, phyOffset int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if f := s.last.Load(); f != nil && !s.closed.Load() {
		return f.EndTimestamp(), f.EndPhyOffset()
	}
	return 0, 0
}

// DeleteExpired deletes, oldest first, the files whose endPhyOffset is
// below minPhyOffset (the CommitLog's minimum offset), stopping at the
// first file that is not, and never deleting the newest file
// (IndexService.deleteExpiredFile). It returns how many files it deleted.
func (s *Service) DeleteExpired(minPhyOffset int64) (int, error) {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	n := 0
	for n < len(s.files)-1 && s.files[n].EndPhyOffset() < minPhyOffset {
		n++
	}
	expired := slices.Clone(s.files[:n])
	s.files = slices.Delete(s.files, 0, n)
	s.mu.Unlock()

	// No Query can reach these files any more; a flush in progress holds
	// its own reference.
	var errs []error
	for _, f := range expired {
		if err := f.Destroy(); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log.Info("deleted expired index file", "file", f.Path(), "minPhyOffset", minPhyOffset)
	}
	return n, errors.Join(errs...)
}

// Files returns the number of index files.
func (s *Service) Files() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.files)
}

// Flush writes every file with entries not yet flushed to disk. RocketMQ
// flushes index files only when they fill and at shutdown.
func (s *Service) Flush() error {
	s.mu.RLock()
	if s.closed.Load() {
		s.mu.RUnlock()
		return ErrClosed
	}
	held := make([]*File, 0, len(s.files))
	for _, f := range s.files {
		if f.mf.Hold() {
			held = append(held, f)
		}
	}
	s.mu.RUnlock()

	// Flush without the lock, so a long msync does not hold up a roll.
	var errs []error
	for _, f := range held {
		if err := f.flushHeld(); err != nil {
			errs = append(errs, err)
		}
		if err := f.mf.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close flushes and unmaps every file. Calls after the first return
// ErrClosed.
func (s *Service) Close() error {
	files, err := s.shutdown()
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Flush(), f.Close())
	}
	return errors.Join(errs...)
}

// Destroy closes the service and deletes all its files
// (IndexService.destroy).
func (s *Service) Destroy() error {
	files, err := s.shutdown()
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Destroy())
	}
	return errors.Join(errs...)
}

// shutdown stops Put and the flusher and takes the files out of s.
func (s *Service) shutdown() ([]*File, error) {
	if !s.closed.CompareAndSwap(false, true) {
		return nil, ErrClosed
	}
	s.putMu.Lock() // waits for a Put in progress; later ones see closed
	close(s.full)
	close(s.warm)
	s.putMu.Unlock()
	s.wg.Wait() // flushLoop has finished the full files

	s.mu.Lock()
	files := s.files
	s.files = nil
	s.last.Store(nil)
	s.mu.Unlock()
	return files, nil
}
