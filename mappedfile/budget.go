package mappedfile

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MapBudget bounds how many files are mapped at once, for files that are
// many and mostly idle (ConsumeQueues: one per topic and queue id). A file
// made with a budget (FileOptions.Budget) is mapped when first held and
// stays mapped while anyone holds it (a Slice, the writer's Space, a
// flush); once more files are mapped than the budget allows, the least
// recently used ones that no one holds are unmapped, to be mapped again at
// their next use. The choice is the CLOCK approximation of LRU: each hold
// marks its file used, and the sweep spares a marked file once, clearing
// its mark. An unmap keeps what was written: the dirty pages stay in the
// page cache, and a flush of an unmapped file syncs them by its path.
//
// Only mmap(2) mappings are released this way: a Mapper whose regions keep
// their bytes in memory would lose what it did not flush.
type MapBudget struct {
	max int

	mu   sync.Mutex // guards ring, hand and every ringIdx
	ring []*File    // the mapped files, in no particular order
	hand int        // the next file the sweep looks at

	mapped       atomic.Int64 // len(ring), for Release to look at without the lock
	maps, unmaps atomic.Int64
}

// NewMapBudget makes a budget of max mappings; max < 1 means 1.
func NewMapBudget(max int) *MapBudget { return &MapBudget{max: max} }

// Max is the number of mappings the budget allows.
func (b *MapBudget) Max() int { return max(b.max, 1) }

// Mapped is how many files of the budget are mapped now. It may exceed Max
// for a moment, or while every mapped file is held.
func (b *MapBudget) Mapped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ring)
}

// Maps and Unmaps count the mappings taken and released since the budget
// was made: Maps minus the files mapped once each is the cost of the
// budget in remaps.
func (b *MapBudget) Maps() int64   { return b.maps.Load() }
func (b *MapBudget) Unmaps() int64 { return b.unmaps.Load() }

// add counts f, just mapped, and unmaps others while over the budget.
func (b *MapBudget) add(f *File) {
	b.maps.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.ringIdx < 0 {
		f.ringIdx = len(b.ring)
		b.ring = append(b.ring, f)
		b.mapped.Store(int64(len(b.ring)))
	}
	if over := len(b.ring) - b.Max(); over > 0 {
		b.sweepLocked(over)
	}
}

// trim unmaps idle files while over the budget: after a release, when an
// earlier sweep found the files it looked at held.
func (b *MapBudget) trim() {
	if b.mapped.Load() <= int64(b.Max()) || !b.mu.TryLock() {
		return
	}
	defer b.mu.Unlock()
	if over := len(b.ring) - b.Max(); over > 0 {
		b.sweepLocked(over)
	}
}

// remove forgets f, unmapped or closed.
func (b *MapBudget) remove(f *File) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(f)
}

func (b *MapBudget) removeLocked(f *File) {
	i := f.ringIdx
	if i < 0 {
		return
	}
	last := len(b.ring) - 1
	b.ring[i] = b.ring[last]
	b.ring[i].ringIdx = i
	b.ring[last] = nil
	b.ring = b.ring[:last]
	b.mapped.Store(int64(len(b.ring)))
	f.ringIdx = -1
}

// sweepLocked unmaps up to n files no one holds, sparing each recently
// used one once; it gives up after two turns of the clock (every file is
// held: the budget is exceeded until they are released).
func (b *MapBudget) sweepLocked(n int) {
	for looked := 0; n > 0 && len(b.ring) > 0 && looked < 2*len(b.ring); looked++ {
		if b.hand >= len(b.ring) {
			b.hand = 0
		}
		f := b.ring[b.hand]
		if f.used.Load() {
			f.used.Store(false)
			b.hand++
			continue
		}
		if !f.unmapIdle() {
			b.hand++
			continue
		}
		b.removeLocked(f) // the last file takes its place, under the hand
		b.unmaps.Add(1)
		n--
	}
}

// holdMapped is Hold for a file under a budget: it maps the file if it is
// not mapped and takes a reference, both under mapMu, so that no unmap
// happens between them.
func (f *File) holdMapped() bool {
	f.mapMu.Lock()
	if !f.available.Load() || !f.refUp() {
		f.mapMu.Unlock()
		return false
	}
	mapped := false
	if f.data == nil {
		if err := f.mapLocked(); err != nil {
			f.mapErr.Store(&err)
			f.mapMu.Unlock()
			f.Release()
			return false
		}
		mapped = true
	}
	f.mapMu.Unlock()
	if !f.used.Load() {
		f.used.Store(true)
	}
	if mapped {
		f.budget.add(f)
	}
	return true
}

// refUp adds a reference unless the count already reached 0 (the file is
// being unmapped for good).
func (f *File) refUp() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// mapLocked maps the file by its path and closes the fd at once. The
// caller holds mapMu.
func (f *File) mapLocked() error {
	fd, err := unix.Open(f.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("mappedfile: map %s: %w", f.path, err)
	}
	b, err := unix.Mmap(fd, 0, f.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("mappedfile: mmap %s (%d bytes): %w", f.path, f.size, err)
	}
	f.region = &mmapRegion{b: b}
	f.data = b
	return nil
}

// unmapLocked unmaps the file if it is mapped. The caller holds mapMu.
func (f *File) unmapLocked() error {
	if f.data == nil {
		return nil
	}
	err := f.region.Close()
	f.region, f.data = nil, nil
	return err
}

// unmapIdle unmaps the file if no one but its owner holds it, and reports
// whether it is unmapped now. It does not wait for a file in use.
func (f *File) unmapIdle() bool {
	if !f.mapMu.TryLock() {
		return false
	}
	defer f.mapMu.Unlock()
	if f.data != nil && f.refs.Load() != 1 {
		return false // held, or being closed (the last Release unmaps it)
	}
	f.coldReads.Store(0)
	return f.unmapLocked() == nil
}

// Mapped reports whether the file is mapped now (always, for a file not
// under a budget, until it is closed).
func (f *File) Mapped() bool {
	if f.budget == nil {
		return f.refs.Load() > 0
	}
	return f.isMapped()
}

// MapError is the error of the last failed attempt to map a file under a
// budget (Hold then returns false), or nil.
func (f *File) MapError() error {
	if p := f.mapErr.Load(); p != nil {
		return *p
	}
	return nil
}

// syncUnmapped makes the file's bytes durable by its path (fdatasync) if
// it is not mapped now, and reports whether it was not: dirty pages left
// by an earlier mapping are in the page cache, and an fdatasync writes
// them without taking a mapping out of the budget.
func (f *File) syncUnmapped() (bool, error) {
	if f.isMapped() {
		return false, nil
	}
	return true, f.withFD(func(fd int) error {
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("mappedfile: flush %s: %w", f.path, err)
		}
		return nil
	})
}

// promoteAfter is how many accesses within one second to a file under a
// budget that is not mapped go by copies (pread(2), or a queue's in-memory
// tail and a later pwrite(2)) before the next one maps it: a queue used
// once in a while costs an open, a pread or pwrite and a close (some
// 20 µs on this VM) rather than a map, a first page fault (100 µs to
// several ms: a write fault on a fresh page of a sparse file may wait for
// the journal) and, later, an unmap (some 140 µs); a queue used again and
// again is mapped, and then costs a copy.
const promoteAfter = 4

// PreferCopy counts an access to the file and reports whether it should
// copy with ReadAt or WriteAt rather than take a Slice or Space (which map
// the file): a file under a budget that is not mapped, and was not used
// often lately (see promoteAfter). Puts spread over 100,000 queues then
// map nothing; a queue used many times a second is mapped.
func (f *File) PreferCopy() bool {
	if f.budget == nil || f.coldReads.Load() > promoteAfter {
		return false // mapped, or to be mapped at this access
	}
	if now := time.Now().Unix(); f.coldSecond.Load() != now {
		f.coldSecond.Store(now)
		f.coldReads.Store(0) // a new second: count again
	}
	f.coldReads.Add(1)
	return !f.isMapped()
}

// isMapped reports whether the mapping is there now.
func (f *File) isMapped() bool {
	f.mapMu.Lock()
	defer f.mapMu.Unlock()
	return f.data != nil
}

// ReadAt copies the file's bytes at off into p and returns how many it
// copied: up to the read position, as Slice would give them. A file under
// a budget that is not mapped is read with pread(2) and stays unmapped.
// It does not allocate.
func (f *File) ReadAt(p []byte, off int) (int, error) {
	n := min(len(p), f.ReadPosition()-off)
	if off < 0 || n <= 0 {
		return 0, nil
	}
	return f.readRaw(p[:n], off)
}

// readRaw is ReadAt whatever the read position says.
func (f *File) readRaw(p []byte, off int) (int, error) {
	n := min(len(p), f.size-off)
	if off < 0 || n <= 0 {
		return 0, nil
	}
	if f.budget != nil && !f.isMapped() {
		if !f.available.Load() {
			return 0, ErrClosed
		}
		return f.pread(p[:n], off)
	}
	if !f.Hold() {
		return 0, errors.Join(ErrClosed, f.MapError())
	}
	defer f.Release()
	return copy(p[:n], f.data[off:off+n]), nil
}

// WriteAt copies p into the file at off, which must be within what the
// writer has reserved (Reserve) and at or after its write position; it
// does not advance the write position (Advance does). A file under a
// budget that is not mapped is written with pwrite(2) and stays unmapped.
// Only the writer may call it.
func (f *File) WriteAt(p []byte, off int) error {
	if off < 0 || off+len(p) > f.size {
		return fmt.Errorf("mappedfile: write %s at %d: %d bytes do not fit", f.path, off, len(p))
	}
	if f.budget != nil && !f.isMapped() {
		if !f.available.Load() {
			return ErrClosed
		}
		return f.pwrite(p, off)
	}
	if !f.Hold() {
		return errors.Join(ErrClosed, f.MapError())
	}
	defer f.Release()
	copy(f.data[off:], p)
	return nil
}

// pwrite writes p at off with pwrite(2), by an fd opened for the call.
func (f *File) pwrite(p []byte, off int) error {
	fd, opened, err := f.takeFD()
	if err != nil {
		return err
	}
	if opened {
		defer unix.Close(fd)
	}
	for len(p) > 0 {
		k, err := unix.Pwrite(fd, p, int64(off))
		if err != nil {
			return fmt.Errorf("mappedfile: write %s at %d: %w", f.path, off, err)
		}
		p, off = p[k:], off+k
	}
	return nil
}

// pread reads p at off with pread(2), by an fd opened for the call. No
// closure: p must not escape (ReadAt does not allocate).
func (f *File) pread(p []byte, off int) (int, error) {
	fd, opened, err := f.takeFD()
	if err != nil {
		return 0, err
	}
	if opened {
		defer unix.Close(fd)
	}
	got := 0
	for got < len(p) {
		k, err := unix.Pread(fd, p[got:], int64(off+got))
		if err != nil {
			return got, fmt.Errorf("mappedfile: read %s at %d: %w", f.path, off+got, err)
		}
		if k == 0 {
			break // shorter than its size: the rest reads as missing
		}
		got += k
	}
	return got, nil
}
