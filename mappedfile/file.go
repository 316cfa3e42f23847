package mappedfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by operations on a File or Queue after Close.
var ErrClosed = errors.New("mappedfile: closed")

// File is one fixed-size mapped file (RocketMQ's MappedFile). One writer
// appends; any number of readers take Slices; one flusher and one committer
// may run at the same time as the writer.
type File struct {
	path string
	from int64 // offset of the file's first byte in its Queue (fileFromOffset)
	size int

	// fd is kept open only for a Mapper that may need it after Map; nil
	// for mmap (a mapping needs no fd, and 100,000 queues would hold
	// 100,000 of them).
	fd     *os.File
	keptFD atomic.Int64 // 1 + an fd OpenFD keeps open until CloseFD; 0 when none
	region Region       // nil while a file under a budget is not mapped
	data   []byte       // region.Bytes()

	// sparse: made as a hole, disk allocated ahead of the writer by
	// Reserve up to allocated (writer only). See sparse.go.
	sparse    bool
	allocated int

	// budget, if not nil, maps the file only while it is used (see
	// MapBudget); mapMu then guards region and data and the taking of
	// references, used is the CLOCK mark, ringIdx the file's place in
	// the budget (guarded by budget.mu), mapErr the last map failure.
	budget     *MapBudget
	mapMu      sync.Mutex
	used       atomic.Bool
	coldReads  atomic.Int32 // accesses PreferCopy counted in coldSecond (or since, once mapped)
	coldSecond atomic.Int64 // the Unix second coldReads counts in
	ringIdx    int
	mapErr     atomic.Pointer[error]

	// buf is the pool buffer writes go to first, nil when writing to the
	// mapping directly. It never changes after creation; once the file is full
	// and committed it goes back to pool (bufReturned) and is not touched again.
	buf         []byte
	pool        *TransientStorePool
	bufReturned atomic.Bool

	wrote     atomic.Int64
	committed atomic.Int64 // used only with a pool buffer
	flushed   atomic.Int64

	// storeTimestamp is the store time of the last record written, kept by
	// the CommitLog for the checkpoint.
	storeTimestamp atomic.Int64

	flushMu  sync.Mutex // one flush at a time
	commitMu sync.Mutex // one commit at a time

	refs      atomic.Int64 // ReferenceResource: 1 for the owner plus 1 per Slice
	available atomic.Bool

	// syncDir makes the file's name durable, once: by the first Flush of a
	// file that Create made (nil when done, or for an opened file).
	// Guarded by flushMu.
	syncDir func(dir string) error
}

// FileName is the name of a file that starts at offset: 20 digits, zero-padded.
func FileName(offset int64) string { return fmt.Sprintf("%020d", offset) }

// ParseFileName returns the start offset a file name stands for.
func ParseFileName(name string) (int64, error) {
	if len(name) != 20 {
		return 0, fmt.Errorf("mappedfile: %q is not a 20-digit offset name", name)
	}
	off, err := strconv.ParseInt(name, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("mappedfile: %q is not a 20-digit offset name", name)
	}
	return off, nil
}

// FileOptions says how a File is created or opened.
type FileOptions struct {
	// Mapper maps the file; nil means MmapMapper.
	Mapper Mapper
	// Pool, if not nil, lends the file a write buffer (new files only).
	Pool *TransientStorePool
	// Sparse makes a new file as a hole of its full size instead of
	// allocating it whole; its writer then calls Reserve before writing
	// (see sparse.go). Files of many mostly-empty queues want it.
	Sparse bool
	// Budget, if not nil, maps the file only while it is used, under the
	// budget's limit (see MapBudget). It applies with mmap only (a nil
	// Mapper or a MmapMapper without huge pages).
	Budget *MapBudget
}

// lazy reports whether the file is mapped only while used.
func (o FileOptions) lazy() bool {
	if o.Budget == nil || o.Pool != nil {
		return false
	}
	m, ok := o.Mapper.(MmapMapper)
	return o.Mapper == nil || ok && !m.HugePages
}

// Create makes a new file of size bytes at path for offset from, allocates
// its disk space, and maps it. An existing file at path is an error.
//
// Its name becomes durable with its first Flush, which syncs the folder
// before it reports anything flushed: nothing in the file is durable before
// that anyway, and a folder sync waits behind all the writeback under way,
// which would stop a ConsumeQueue's writer at each new file for as long as
// a large CommitLog flush takes (RocketMQ syncs neither).
func Create(path string, from int64, size int, opts FileOptions) (*File, error) {
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mappedfile: create: %w", err)
	}
	alloc := Preallocate
	if opts.Sparse {
		alloc = (*os.File).Truncate
	}
	if err := alloc(fd, int64(size)); err != nil {
		fd.Close()
		os.Remove(path)
		return nil, fmt.Errorf("mappedfile: allocate %d bytes for %s (disk full?): %w", size, path, err)
	}
	f, err := mapFile(fd, path, from, size, opts)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	f.syncDir = SyncDir
	if opts.Pool != nil && opts.Pool.BufferSize() >= size {
		if b := opts.Pool.borrow(); b != nil {
			clear(b) // a used buffer: keep free bytes zero, as in a new file
			f.buf, f.pool = b[:size:size], opts.Pool
		}
	}
	return f, nil
}

// CreatingSuffix ends the name of a file that CreateWhole has not
// finished: a crash may leave one behind, for its owner to delete.
const CreatingSuffix = ".tmp"

// CreateWhole makes a new file of size bytes at path, for files that must
// never be seen short or half made: CreateSparse with all of it allocated
// (made as path + CreatingSuffix, synced, renamed, its folder synced, then
// mapped). An existing file at path is an error. Its positions start at 0.
func CreateWhole(path string, size int, opts FileOptions) (*File, error) {
	return CreateSparse(path, size, size, opts)
}

// Open maps an existing file of exactly size bytes. Its positions are all set
// to size (the whole file counts as written) until SetPosition says otherwise,
// as recovery does.
func Open(path string, from int64, size int, opts FileOptions) (*File, error) {
	fd, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("mappedfile: open: %w", err)
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("mappedfile: open: %w", err)
	}
	if st.Size() != int64(size) {
		fd.Close()
		return nil, fmt.Errorf("mappedfile: %s is %d bytes, want %d: %w", path, st.Size(), size, ErrBadSize)
	}
	f, err := mapFile(fd, path, from, size, opts)
	if err != nil {
		return nil, err
	}
	f.SetPosition(size)
	return f, nil
}

// openSized is Open for a file whose size the caller just read (from its
// folder): a file under a budget is then not even opened until it is used.
func openSized(path string, from int64, size int, statSize int64, opts FileOptions) (*File, error) {
	if !opts.lazy() {
		return Open(path, from, size, opts)
	}
	if statSize != int64(size) {
		return nil, fmt.Errorf("mappedfile: %s is %d bytes, want %d: %w", path, statSize, size, ErrBadSize)
	}
	f := &File{path: path, from: from, size: size, sparse: opts.Sparse, ringIdx: -1, budget: opts.Budget}
	f.refs.Store(1)
	f.available.Store(true)
	f.SetPosition(size)
	return f, nil
}

// ErrBadSize reports a file whose length is not the configured file size.
var ErrBadSize = errors.New("mappedfile: file has the wrong size")

// mapFile maps fd (or, under a budget, leaves that to the first Hold) and
// closes it unless the Mapper may need it.
func mapFile(fd *os.File, path string, from int64, size int, opts FileOptions) (*File, error) {
	f := &File{path: path, from: from, size: size, sparse: opts.Sparse, ringIdx: -1}
	f.refs.Store(1)
	f.available.Store(true)
	if opts.lazy() {
		f.budget = opts.Budget
		if err := fd.Close(); err != nil {
			return nil, fmt.Errorf("mappedfile: close %s: %w", path, err)
		}
		return f, nil
	}
	m := opts.Mapper
	if m == nil {
		m = MmapMapper{}
	}
	r, err := m.Map(fd, size)
	if err != nil {
		fd.Close()
		return nil, err
	}
	f.region, f.data = r, r.Bytes()
	if _, ok := m.(MmapMapper); ok {
		err = fd.Close()
	} else {
		f.fd = fd
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("mappedfile: close %s: %w", path, err)
	}
	return f, nil
}

// Path is the file's path on disk.
func (f *File) Path() string { return f.path }

// From is the offset of the file's first byte in its Queue (fileFromOffset).
func (f *File) From() int64 { return f.from }

// Size is the fixed length of the file in bytes.
func (f *File) Size() int { return f.size }

// WrotePosition is how many bytes have been appended.
func (f *File) WrotePosition() int { return int(f.wrote.Load()) }

// CommittedPosition is how many bytes are in the mapping: equal to
// WrotePosition unless the file writes to a pool buffer first.
func (f *File) CommittedPosition() int {
	if f.buf == nil {
		return int(f.wrote.Load())
	}
	return int(f.committed.Load())
}

// ReadPosition is how far readers may read (RocketMQ's getReadPosition).
func (f *File) ReadPosition() int { return f.CommittedPosition() }

// FlushedPosition is how many bytes are known durable.
func (f *File) FlushedPosition() int { return int(f.flushed.Load()) }

// IsFull reports whether the file has been written to its end.
func (f *File) IsFull() bool { return int(f.wrote.Load()) == f.size }

// HasPoolBuffer reports whether writes go to a pool buffer first.
func (f *File) HasPoolBuffer() bool { return f.buf != nil }

// SetPosition sets the write, commit and flush positions to pos, as recovery
// does after finding the end of valid data.
func (f *File) SetPosition(pos int) {
	f.wrote.Store(int64(pos))
	f.committed.Store(int64(pos))
	f.flushed.Store(int64(pos))
}

// Truncate cuts the file at pos: the positions move back to pos and the
// bytes after it become zero, so nothing written before can reappear after
// later appends.
func (f *File) Truncate(pos int) error {
	if pos < 0 || pos > f.size {
		return fmt.Errorf("mappedfile: truncate %s at %d: outside the file", f.path, pos)
	}
	f.SetPosition(pos)
	if f.buf != nil {
		clear(f.buf[pos:])
	}
	if !f.Hold() {
		return fmt.Errorf("mappedfile: truncate %s: %w", f.path, errors.Join(ErrClosed, f.MapError()))
	}
	defer f.Release()
	if _, ok := f.region.(*mmapRegion); ok {
		// Give the pages back rather than write zeros into them.
		head := min((pos+pageSize-1)&^(pageSize-1), f.size)
		clear(f.data[pos:head])
		if f.punchTail(head) {
			return nil
		}
	}
	clear(f.data[pos:])
	return nil
}

// StoreTimestamp is the store time of the last record written, as set by
// SetStoreTimestamp.
func (f *File) StoreTimestamp() int64 { return f.storeTimestamp.Load() }

// SetStoreTimestamp records the store time of the last record written.
func (f *File) SetStoreTimestamp(ms int64) { f.storeTimestamp.Store(ms) }

// Writable returns the free tail of the file, from the write position to the
// end, in the pool buffer if the file has one, else in the mapping; its bytes
// are zero in a new file. Only the
// single writer may use it, and only until it calls Advance; under a
// budget, only while it holds the file (use Space).
func (f *File) Writable() []byte {
	w := f.wrote.Load()
	if f.buf != nil {
		return f.buf[w:]
	}
	return f.data[w:]
}

// Advance publishes n more bytes written into Writable. Readers see them
// (after Commit, with a pool buffer) from now on. Only the single writer
// may call it: it stores rather than adds, which is cheaper.
func (f *File) Advance(n int) { f.wrote.Store(f.wrote.Load() + int64(n)) }

// Append copies p to the write position if it fits whole and reports
// whether it did.
func (f *File) Append(p []byte) bool {
	w := f.Writable()
	if len(p) > len(w) {
		return false
	}
	f.Advance(copy(w, p))
	return true
}

// Commit copies the bytes written to the pool buffer into the mapping, when
// at least leastPages pages are waiting (any amount when leastPages is 0, and
// always when the file is full). It returns the committed position. A full,
// fully committed file gives its buffer back to the pool.
func (f *File) Commit(leastPages int) int {
	if f.buf == nil {
		return int(f.wrote.Load())
	}
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	w, c := int(f.wrote.Load()), int(f.committed.Load())
	if ableTo(w, c, f.size, leastPages) {
		copy(f.data[c:w], f.buf[c:w])
		f.committed.Store(int64(w))
		c = w
	}
	if c == f.size && f.bufReturned.CompareAndSwap(false, true) {
		f.pool.giveBack(f.buf)
	}
	return c
}

// Flush makes the committed bytes durable when at least leastPages pages are
// waiting (any amount when leastPages is 0, and always when the file is full),
// and returns the flushed position. The first Flush of a file Create made
// also makes its name durable (syncs its folder).
func (f *File) Flush(leastPages int) (int, error) {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	end, done := f.CommittedPosition(), int(f.flushed.Load())
	if !ableTo(end, done, f.size, leastPages) {
		return done, nil
	}
	if err := f.flushRange(done, end); err != nil {
		return done, err
	}
	if f.syncDir != nil {
		if err := f.syncDir(filepath.Dir(f.path)); err != nil {
			return done, err
		}
		f.syncDir = nil
	}
	f.flushed.Store(int64(end))
	return end, nil
}

// flushRange makes [from, end) durable: by msync while the file is mapped,
// else (a file under a budget, unmapped since it was written) by fdatasync.
func (f *File) flushRange(from, end int) error {
	if !f.available.Load() {
		return ErrClosed
	}
	if f.budget != nil {
		if done, err := f.syncUnmapped(); done {
			return err
		}
	}
	if !f.Hold() {
		return errors.Join(ErrClosed, f.MapError())
	}
	defer f.Release()
	if err := f.region.Flush(from, end-from); err != nil {
		return fmt.Errorf("mappedfile: flush %s: %w", f.path, err)
	}
	return nil
}

// Mapping is the whole writable mapping, for files that are not written
// by appends (index files: a header, hash slots and entries, written in
// place). It is valid while the caller holds the file (the owner's
// reference counts).
func (f *File) Mapping() []byte { return f.data }

// Sync makes the whole mapping durable (msync), whatever the positions
// say, for files written through Mapping. It may run while the mapping is
// being written: what is written meanwhile may or may not be made durable.
func (f *File) Sync() error {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	if !f.Hold() {
		return ErrClosed
	}
	defer f.Release()
	if err := f.region.Flush(0, f.size); err != nil {
		return fmt.Errorf("mappedfile: flush %s: %w", f.path, err)
	}
	return nil
}

// ableTo is RocketMQ's isAbleToFlush / isAbleToCommit.
func ableTo(end, done, size, leastPages int) bool {
	if end == size && done < end {
		return true
	}
	if leastPages > 0 {
		return end/pageSize-done/pageSize >= leastPages
	}
	return end > done
}

// Warm faults in every page of the mapping for writing, so that appends do
// not pay for page faults. Call it before the first write.
func (f *File) Warm() error {
	if f.sparse {
		return nil // faulting in a sparse file for writing would allocate it whole
	}
	if f.buf != nil {
		_ = unix.Mlock(f.buf) // best effort: the buffer stays in memory
	}
	if err := Populate(f.data); err == nil {
		return nil
	}
	for i := 0; i < len(f.data); i += pageSize {
		f.data[i] = 0 // the file is new: its bytes are zero already
	}
	return nil
}

// warmChunk is how much warmFrom faults in between looks at its stop flag.
const warmChunk = 32 << 20

// warmFrom faults in, for writing, the pages of the mapping from the one
// holding pos to the end, unless the file is closed or has a pool buffer
// (writes go there first). It gives up once stop is set (its queue is
// closing), so a Close does not wait for a whole file to be faulted in.
// Best effort: a page it misses faults when written. It may run while
// the writer writes: it changes no byte.
func (f *File) warmFrom(pos int, stop *atomic.Bool) {
	if f.buf != nil || f.sparse || !f.Hold() {
		return
	}
	defer f.Release()
	for off := pos &^ (pageSize - 1); off < len(f.data) && !stop.Load(); off += warmChunk {
		if Populate(f.data[off:min(off+warmChunk, len(f.data))]) != nil {
			return
		}
	}
}

// Populate faults in, for writing, the pages of a mapping under b, which
// must start at a page boundary, without changing a byte, so that the
// writes that follow do not stop for page faults. It uses
// MADV_POPULATE_WRITE (Linux 5.14+) and returns its error where the kernel
// lacks it.
func Populate(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE)
}

// Slice is a read-only view of part of a File's mapping. It holds a reference
// on the File: call Release when done; the bytes are invalid afterwards.
type Slice struct {
	b []byte
	f *File
}

// Bytes are the bytes of the slice, valid until Release. Do not write them.
func (s Slice) Bytes() []byte { return s.b }

// Prefix narrows the slice to its first n bytes; it keeps the same
// reference, so release only the result.
func (s Slice) Prefix(n int) Slice {
	s.b = s.b[:n:n]
	return s
}

// Part returns n bytes of s from pos, if s holds them. The part shares
// s's reference: it is valid until s is released, and releasing the part
// does nothing.
func (s Slice) Part(pos, n int) (Slice, bool) {
	if pos < 0 || n < 0 || pos+n > len(s.b) {
		return Slice{}, false
	}
	return Slice{b: s.b[pos : pos+n : pos+n]}, true
}

// Release drops the slice's reference on its File.
func (s Slice) Release() {
	if s.f != nil {
		s.f.Release()
	}
}

// Slice returns n bytes from pos, if they are all readable and the file is
// still available.
func (f *File) Slice(pos, n int) (Slice, bool) {
	if pos < 0 || n < 0 || pos+n > f.ReadPosition() || !f.Hold() {
		return Slice{}, false
	}
	return Slice{b: f.data[pos : pos+n : pos+n], f: f}, true
}

// SliceFrom returns the readable bytes from pos to the read position.
func (f *File) SliceFrom(pos int) (Slice, bool) {
	return f.Slice(pos, f.ReadPosition()-pos)
}

// Hold takes a reference if the file is still available, and reports
// whether it did (ReferenceResource.hold): the mapping stays until the
// matching Release, even across Close or Destroy. Slices hold one each.
func (f *File) Hold() bool {
	if f.budget != nil {
		return f.holdMapped()
	}
	if !f.available.Load() {
		return false
	}
	if f.refs.Add(1) > 1 {
		return true
	}
	f.refs.Add(-1) // cleanup has started
	return false
}

// Release drops a reference taken by Hold; the last one (the owner's, by
// Close, if no other is left) unmaps the file and closes it.
func (f *File) Release() error {
	if f.refs.Add(-1) > 0 {
		if f.budget != nil {
			f.budget.trim()
		}
		return nil
	}
	var err error
	if f.budget != nil {
		f.mapMu.Lock()
		err = f.unmapLocked()
		f.mapMu.Unlock()
		f.budget.remove(f)
	} else {
		err = f.region.Close()
	}
	if f.buf != nil && f.bufReturned.CompareAndSwap(false, true) {
		f.pool.giveBack(f.buf)
	}
	if f.fd != nil {
		err = errors.Join(err, f.fd.Close())
	}
	err = errors.Join(err, f.CloseFD())
	if err != nil {
		return fmt.Errorf("mappedfile: close %s: %w", f.path, err)
	}
	return nil
}

// Available reports whether the file is open: not closed or destroyed
// (ReferenceResource.isAvailable). A holder may go on using a file that is
// no longer available until it releases it.
func (f *File) Available() bool { return f.available.Load() }

// Close makes the file unavailable to new readers and drops the owner's
// reference: it is unmapped once the last Slice is released. It does not
// flush. Calls after the first return ErrClosed.
func (f *File) Close() error {
	if !f.available.CompareAndSwap(true, false) {
		return ErrClosed
	}
	return f.Release()
}

// Destroy closes the file and deletes it from disk. The name is removed at
// once; the mapping and the disk space go when the last Slice is released.
func (f *File) Destroy() error {
	err := os.Remove(f.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := f.Close(); cerr != nil && !errors.Is(cerr, ErrClosed) {
		err = errors.Join(err, cerr)
	}
	if err == nil {
		err = SyncDir(filepath.Dir(f.path))
	}
	return err
}

// SyncDir makes a change of names in dir (a create, rename or delete)
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mappedfile: sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mappedfile: sync dir %s: %w", dir, err)
	}
	return nil
}
