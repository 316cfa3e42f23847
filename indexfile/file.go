package indexfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// Positions of the header fields (IndexHeader).
const (
	offBeginTimestamp = 0
	offEndTimestamp   = 8
	offBeginPhyOffset = 16
	offEndPhyOffset   = 24
	offHashSlotCount  = 32
	offIndexCount     = 36
)

var be = binary.BigEndian

// File is one index file (RocketMQ's IndexFile): a header, a table of hash
// slots and a run of entries, each entry linked to the previous entry of its
// slot.
//
// One goroutine may Put while any number of others call Select and the
// header accessors. Close and Destroy must not run at the same time as Put,
// Select or the accessors, nor may those be called after them: the mapping
// is gone. Flush may run at any time.
//
// Put publishes an entry in three steps: it writes the entry, then stores
// its number into the slot, then stores the new indexCount into the header,
// the last two with atomic stores. Readers load indexCount first and follow
// only entry numbers below it, so they never see an entry being written.
type File struct {
	mf      *mappedfile.File // the mapping, its reference counts and its life on disk
	slots   int
	indexes int
	entries int // offset of entry 0: HeaderSize + slots×SlotSize
	size    int
	b       []byte // mf.Mapping()[:size]

	flushedCount atomic.Int32 // raw indexCount at the last flush, -1 before any

	warmedTo int // bytes from the start asked to be faulted in; the Service's, under putMu
	// allocatedTo is how many bytes from the start have disk allocated
	// (the writer's: Put's and cut's): the file is sparse past it, and a
	// write there could fault on a full disk.
	allocatedTo int
}

// allocStep is how far ahead of the next entry Put has the entries
// allocated, in bytes: one fallocate per 200,000 entries or so.
const allocStep = 4 << 20

// allocateFor makes sure the first end bytes of the file have their disk
// allocated, allocating allocStep past end at a time, so that the writes
// below end cannot fault for want of space: a full disk is an error here,
// wrapping syscall.ENOSPC.
func (f *File) allocateFor(end int) error {
	if end <= f.allocatedTo {
		return nil
	}
	to := min(f.size, max(end, f.allocatedTo)+allocStep)
	if err := f.mf.Allocate(f.allocatedTo, to-f.allocatedTo); err != nil {
		return fmt.Errorf("indexfile: %w", err)
	}
	f.allocatedTo = to
	return nil
}

// CreateFile creates the index file path, sized by opts.HashSlots and
// opts.MaxIndexes, and maps it. It is sparse, as RocketMQ's: only its
// header and hash slots get disk now, its entries as Put reaches them
// (allocStep ahead), so a file costs disk as it fills and a full disk is
// an error of Put, never a fault. The file is made and durable before it
// gets its name (mappedfile.CreateSparse), so a crash never leaves a
// short index file behind. A file that follows
// a full one starts from that file's end values: endPhyOffset and
// endTimestamp, when positive, become both its begin and its end values,
// as in RocketMQ. An existing file at path is an error.
func CreateFile(path string, endPhyOffset, endTimestamp int64, opts Options) (*File, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("indexfile: create %s: %w", path, err)
	}
	head := HeaderSize + opts.HashSlots*SlotSize
	mf, err := mappedfile.CreateSparse(path, fileSize(opts.HashSlots, opts.MaxIndexes), head, mappedfile.FileOptions{Mapper: opts.Mapper})
	if err != nil {
		return nil, fmt.Errorf("indexfile: %w", err)
	}
	f, err := newFile(mf, opts)
	if err != nil {
		return nil, errors.Join(err, mf.Destroy())
	}
	f.allocatedTo = head
	if endPhyOffset > 0 {
		f.store64(offBeginPhyOffset, endPhyOffset)
		f.store64(offEndPhyOffset, endPhyOffset)
	}
	if endTimestamp > 0 {
		f.store64(offBeginTimestamp, endTimestamp)
		f.store64(offEndTimestamp, endTimestamp)
	}
	f.store32(offIndexCount, 1)
	return f, nil
}

// OpenFile maps the existing index file path. Its length must match
// opts.HashSlots and opts.MaxIndexes (the header does not record them).
// Header counts that a crash or a bad disk left out of range are tolerated:
// a file claiming more entries than it can hold counts as full, and Select
// never reads outside the file.
func OpenFile(path string, opts Options) (*File, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("indexfile: open %s: %w", path, err)
	}
	size := fileSize(opts.HashSlots, opts.MaxIndexes)
	mf, err := mappedfile.Open(path, 0, size, mappedfile.FileOptions{Mapper: opts.Mapper})
	if errors.Is(err, mappedfile.ErrBadSize) {
		return nil, fmt.Errorf("indexfile: HashSlots %d and MaxIndexes %d make %d bytes; "+
			"open it with the options it was written with: %w: %w", opts.HashSlots, opts.MaxIndexes, size, ErrBadSize, err)
	}
	if err != nil {
		return nil, fmt.Errorf("indexfile: %w", err)
	}
	f, err := newFile(mf, opts)
	if err != nil {
		return nil, errors.Join(err, mf.Close())
	}
	f.flushedCount.Store(f.load32(offIndexCount)) // what is on disk needs no flush
	return f, nil
}

// newFile is the index file over the mapping of mf.
func newFile(mf *mappedfile.File, opts Options) (*File, error) {
	size := fileSize(opts.HashSlots, opts.MaxIndexes)
	b := mf.Mapping()
	// Header fields and slots are read and written atomically, which needs
	// them aligned; an mmap is page-aligned.
	if len(b) < size || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return nil, fmt.Errorf("indexfile: map %s: mapper returned %d bytes at an address not 8-byte aligned or short of %d",
			mf.Path(), len(b), size)
	}
	f := &File{
		mf:      mf,
		slots:   opts.HashSlots,
		indexes: opts.MaxIndexes,
		entries: HeaderSize + opts.HashSlots*SlotSize,
		size:    size,
		b:       b[:size:size],
	}
	f.flushedCount.Store(-1)
	return f, nil
}

// Path is the file's path on disk.
func (f *File) Path() string { return f.mf.Path() }

// Name is the file's name: its creation time, yyyyMMddHHmmssSSS.
func (f *File) Name() string { return filepath.Base(f.mf.Path()) }

// Size is the file's length in bytes.
func (f *File) Size() int { return f.size }

// BeginTimestamp is the store time (ms) of the first entry.
func (f *File) BeginTimestamp() int64 { return f.load64(offBeginTimestamp) }

// EndTimestamp is the store time (ms) of the last entry.
func (f *File) EndTimestamp() int64 { return f.load64(offEndTimestamp) }

// BeginPhyOffset is the CommitLog offset of the first entry's message.
func (f *File) BeginPhyOffset() int64 { return f.load64(offBeginPhyOffset) }

// EndPhyOffset is the CommitLog offset of the last entry's message.
func (f *File) EndPhyOffset() int64 { return f.load64(offEndPhyOffset) }

// HashSlotCount is the number of slots in use, as recorded in the header.
func (f *File) HashSlotCount() int32 { return f.load32(offHashSlotCount) }

// IndexCount is the number of the next entry to write: one more than the
// number of entries, since entry 0 is never used. A header value below 1
// counts as 1, as RocketMQ's IndexHeader.load does.
func (f *File) IndexCount() int32 { return max(f.load32(offIndexCount), 1) }

// IsFull reports whether the file has no room for another entry
// (IndexFile.isWriteFull).
func (f *File) IsFull() bool { return int(f.IndexCount()) >= f.indexes }

// TimeMatched reports whether [begin, end] overlaps the file's
// [BeginTimestamp, EndTimestamp] (IndexFile.isTimeMatched).
func (f *File) TimeMatched(begin, end int64) bool {
	b, e := f.BeginTimestamp(), f.EndTimestamp()
	return (begin < b && end > e) || (begin >= b && begin <= e) || (end >= b && end <= e)
}

// Put appends an entry for a key with the given index hash (see KeyHash)
// and links it to the slot's previous entry (IndexFile.putKey). It returns
// ErrFull when the file has no room. Only one goroutine may Put.
//
// A slot value at or above indexCount can only be left over from a crash
// (RocketMQ drops only values above it); it counts as an empty slot.
func (f *File) Put(hash int32, phyOffset, storeTimestamp int64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer f.recoverFault(&err)
	return f.put(hash, phyOffset, storeTimestamp)
}

// put is Put for a caller that has turned memory faults into ErrFault
// (recoverFault) around it, as Service.Put does once for all the keys of
// a message.
func (f *File) put(hash int32, phyOffset, storeTimestamp int64) error {
	if hash < 0 {
		return fmt.Errorf("indexfile: put into %s: key hash %d is negative; use KeyHash", f.Path(), hash)
	}
	if !f.mf.Available() {
		return ErrClosed
	}
	count := f.IndexCount()
	if int(count) >= f.indexes {
		return ErrFull
	}
	if end := f.entries + int(count+1)*EntrySize; end > f.allocatedTo { // once per allocStep
		if err := f.allocateFor(end); err != nil {
			return err
		}
	}
	slotPos := f.slotPos(hash)
	prev := f.load32(slotPos)
	if prev <= 0 || prev >= count { // empty, or left over by a crash
		prev = 0
	}
	var timeDiff int64 // seconds since BeginTimestamp, clamped to an int32
	if begin := f.BeginTimestamp(); begin > 0 {
		timeDiff = min(max((storeTimestamp-begin)/1000, 0), math.MaxInt32)
	}

	e := f.b[f.entries+int(count)*EntrySize:][:EntrySize]
	be.PutUint32(e[0:], uint32(hash))
	be.PutUint64(e[4:], uint64(phyOffset))
	be.PutUint32(e[12:], uint32(timeDiff))
	be.PutUint32(e[16:], uint32(prev))

	f.store32(slotPos, count)
	if count <= 1 {
		f.store64(offBeginPhyOffset, phyOffset)
		f.store64(offBeginTimestamp, storeTimestamp)
	}
	if prev == 0 {
		f.store32(offHashSlotCount, f.load32(offHashSlotCount)+1)
	}
	// Atomic stores cost a locked instruction each; the keys of one message
	// share these values, and messages often share a millisecond.
	if f.load64(offEndPhyOffset) != phyOffset {
		f.store64(offEndPhyOffset, phyOffset)
	}
	if f.load64(offEndTimestamp) != storeTimestamp {
		f.store64(offEndTimestamp, storeTimestamp)
	}
	f.store32(offIndexCount, count+1) // publishes the entry
	return nil
}

// slotPos is the position of the slot of hash (not negative). The slot
// count fits an int32, and a 32-bit division is the quicker one.
func (f *File) slotPos(hash int32) int {
	return HeaderSize + int(uint32(hash)%uint32(f.slots))*SlotSize
}

// touchSlots reads the hash slots of hashes, so that they are in the cache
// when put writes them, and returns their XOR (for the caller to keep, so
// the reads stay).
func (f *File) touchSlots(hashes []int32) uint32 {
	var x uint32
	for _, h := range hashes {
		if h >= 0 {
			x ^= uint32(f.load32(f.slotPos(h)))
		}
	}
	return x
}

// Select appends to dst, newest first, the CommitLog offsets of the entries
// with the given index hash whose store time is in [begin, end], until dst
// holds maxNum offsets (IndexFile.selectPhyOffset). Only hashes are
// compared, so offsets of other keys with the same hash may be included.
//
// The walk follows a slot's chain to older entries and ends at an empty
// link, at a link that does not point to an older entry (RocketMQ ends only
// at prev > indexCount or prev = current; an older-only walk cannot cycle on
// a corrupt file), or at an entry older than begin. It returns the offsets
// found so far with ErrFault if the mapping faults.
func (f *File) Select(dst []int64, hash int32, maxNum int, begin, end int64) (out []int64, err error) {
	out = dst
	if hash < 0 || len(out) >= maxNum {
		return out, nil
	}
	if !f.mf.Available() {
		return out, ErrClosed
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer f.recoverFault(&err)

	// Entries below count are complete and never change again.
	count := min(f.IndexCount(), int32(f.indexes))
	cur := f.load32(f.slotPos(hash))
	if cur <= 0 || cur >= count {
		return out, nil
	}
	beginTs := f.BeginTimestamp() // set before count passed 1
	for len(out) < maxNum {
		e := f.b[f.entries+int(cur)*EntrySize:][:EntrySize]
		keyHash := int32(be.Uint32(e[0:]))
		phyOffset := int64(be.Uint64(e[4:]))
		timeDiff := int32(be.Uint32(e[12:]))
		prev := int32(be.Uint32(e[16:]))
		if timeDiff < 0 {
			break
		}
		t := beginTs + int64(timeDiff)*1000
		if keyHash == hash && t >= begin && t <= end {
			out = append(out, phyOffset)
		}
		if prev <= 0 || prev >= cur || t < begin {
			break
		}
		cur = prev
	}
	return out, nil
}

// Flush writes the whole mapping to disk (msync), unless nothing was put
// since the last flush.
func (f *File) Flush() error {
	if !f.mf.Hold() {
		return ErrClosed
	}
	defer f.mf.Release()
	return f.flushHeld()
}

// flushHeld is Flush for a caller that holds a reference. A file cut short
// under its mapping gives ErrFault.
func (f *File) flushHeld() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer f.recoverFault(&err)
	// Read before the flush: what the flush makes durable holds at least
	// this count. Flushes that overlap store their counts in any order,
	// which can only make a later flush write again.
	count := f.load32(offIndexCount)
	if count == f.flushedCount.Load() {
		return nil
	}
	if err := f.mf.Sync(); err != nil {
		return fmt.Errorf("indexfile: %w", err)
	}
	f.flushedCount.Store(count)
	return nil
}

// Close unmaps the file without flushing it. The mapping goes when the
// last background user (a flush in progress) is done. Calls after the first
// return ErrClosed.
func (f *File) Close() error {
	err := f.mf.Close()
	if errors.Is(err, mappedfile.ErrClosed) {
		return ErrClosed
	}
	if err != nil {
		return fmt.Errorf("indexfile: %w", err)
	}
	return nil
}

// Destroy closes the file and deletes it from disk.
func (f *File) Destroy() error {
	if err := f.mf.Destroy(); err != nil {
		return fmt.Errorf("indexfile: destroy %s: %w", f.Path(), err)
	}
	return nil
}

// recoverFault turns a memory fault inside Put or Select (armed with
// debug.SetPanicOnFault) into ErrFault. Other panics go on.
func (f *File) recoverFault(err *error) {
	if e := faultError(recover(), f.Path()); e != nil {
		*err = e
	}
}

// faultError is the ErrFault error for r, a value recovered from a panic
// in path, nil for nil; it panics again with any other value.
func faultError(r any, path string) error {
	if r == nil {
		return nil
	}
	if fe, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("indexfile: %s: memory fault at %#x: %w", path, fe.Addr(), ErrFault)
	}
	panic(r)
}

// Header fields and slots are big-endian in the file and accessed
// atomically, so readers never see a torn value.

func (f *File) load64(off int) int64 {
	return int64(swap64(atomic.LoadUint64((*uint64)(unsafe.Pointer(&f.b[off])))))
}

func (f *File) store64(off int, v int64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&f.b[off])), swap64(uint64(v)))
}

func (f *File) load32(off int) int32 {
	return int32(swap32(atomic.LoadUint32((*uint32)(unsafe.Pointer(&f.b[off])))))
}

func (f *File) store32(off int, v int32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&f.b[off])), swap32(uint32(v)))
}

// swap64 converts between a big-endian value in memory and a native one
// (a byte swap on a little-endian machine, nothing on a big-endian one).
func swap64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return be.Uint64(b[:])
}

// swap32 is swap64 for 32-bit values.
func swap32(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return be.Uint32(b[:])
}
