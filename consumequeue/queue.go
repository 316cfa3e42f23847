package consumequeue

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/mappedfile"
)

var (
	// ErrGap is returned by Put for a queue offset beyond the next one the
	// queue expects: writing it would misalign every later unit.
	ErrGap = errors.New("consumequeue: queue offset leaves a gap")
	// ErrInvalidUnit is returned by Put for a unit recovery would not accept
	// (offset < 0, size ≤ 0, a placeholder) or a negative queue offset.
	ErrInvalidUnit = errors.New("consumequeue: invalid unit")
	// ErrClosed is returned by operations on a closed Queue or Table.
	ErrClosed = errors.New("consumequeue: closed")
	// ErrBadName is returned for a topic or queue id that cannot name a
	// folder (empty, ".", "..", a path separator, a NUL byte, an id < 0).
	ErrBadName = errors.New("consumequeue: bad topic or queue id")

	// ErrOffsetTooSmall is returned by Read for an index below MinOffset:
	// the unit was deleted with its CommitLog file (OFFSET_TOO_SMALL).
	ErrOffsetTooSmall = errors.New("consumequeue: offset below the queue's min offset")
	// ErrOffsetOverflowOne is returned by Read for an index equal to
	// MaxOffset: no message there yet (OFFSET_OVERFLOW_ONE; a caught-up
	// consumer, or NO_MESSAGE_IN_QUEUE when MaxOffset is 0).
	ErrOffsetOverflowOne = errors.New("consumequeue: offset at the queue's max offset")
	// ErrOffsetOverflowBadly is returned by Read for an index beyond
	// MaxOffset (OFFSET_OVERFLOW_BADLY).
	ErrOffsetOverflowBadly = errors.New("consumequeue: offset beyond the queue's max offset")
)

// Options says how queues are opened. The zero value works.
type Options struct {
	// FileUnits is the number of units per file; 0 means DefaultFileUnits
	// (300,000, i.e. 6,000,000-byte files). All files of a queue must have
	// been written with the same value.
	FileUnits int
	// Mapper maps files; nil means mappedfile.MmapMapper.
	Mapper mappedfile.Mapper
	// MaxMappedFiles bounds how many files of the queues opened with these
	// options (a Table's, or one Queue's) are mapped at once: the least
	// recently used files no one reads or writes are unmapped past it and
	// mapped again when used (see mappedfile.MapBudget). 0 means no bound:
	// every file stays mapped while open. It applies with mmap only (a nil
	// Mapper or a mappedfile.MmapMapper without huge pages).
	MaxMappedFiles int
	// Logger receives state changes; nil discards.
	Logger *slog.Logger

	// budget is the MapBudget of MaxMappedFiles, made once by withDefaults
	// and shared by every queue opened with these options.
	budget *mappedfile.MapBudget
}

func (o Options) withDefaults() Options {
	if o.FileUnits == 0 {
		o.FileUnits = DefaultFileUnits
	}
	if o.MaxMappedFiles > 0 && o.budget == nil {
		o.budget = mappedfile.NewMapBudget(o.MaxMappedFiles)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// maxFileUnits keeps a file within RocketMQ's int file sizes.
const maxFileUnits = math.MaxInt32 / UnitSize

func (o Options) validate() error {
	var errs []error
	if o.FileUnits < 0 || o.FileUnits > maxFileUnits {
		errs = append(errs, fmt.Errorf("FileUnits %d must be in [1, %d] (0 means %d)",
			o.FileUnits, maxFileUnits, DefaultFileUnits))
	}
	if o.MaxMappedFiles < 0 {
		errs = append(errs, fmt.Errorf("MaxMappedFiles %d must not be negative (0 means no bound)", o.MaxMappedFiles))
	}
	return errors.Join(errs...)
}

// checkName rejects a topic or queue id that would not name exactly one
// folder under the root.
func checkName(topic string, queueID int32) error {
	if topic == "" || topic == "." || topic == ".." || strings.ContainsAny(topic, "/\\\x00") || queueID < 0 {
		return fmt.Errorf("consumequeue: topic %q, queue id %d: %w", topic, queueID, ErrBadName)
	}
	return nil
}

// Queue is one ConsumeQueue (RocketMQ's ConsumeQueue): the units of one
// topic and queue id. See the package doc for who may call what at once.
type Queue struct {
	topic    string
	queueID  int32
	dir      string
	fileSize int
	log      *slog.Logger
	files    *mappedfile.Queue

	// Positions readers load without locks. min and max are unit indexes
	// (max is the next index to write); maxPhys is the CommitLog offset
	// just after the last unit's message, -1 when there is none.
	min     atomic.Int64
	max     atomic.Int64
	maxPhys atomic.Int64
	// headPhys is the CommitLog offset of the unit at min, -1 when not
	// known (no unit there yet, or not read since min moved): expiry
	// passes over a queue whose head is above the CommitLog's new start
	// without reading a file.
	headPhys atomic.Int64
	// tail holds units not yet written to tailFile (see tail.go); tailN
	// is len(tail), for a look without the lock.
	tailMu   sync.RWMutex
	tail     []byte
	tailFile *mappedfile.File
	tailN    atomic.Int64
	// dirty is set by Put when the queue has units to flush and no flush
	// has taken it since; onDirty (the Table's) is told then.
	dirty   atomic.Bool
	onDirty func(*Queue)
	// rebuildFrom is the CommitLog offset from which recovery found the
	// queue damaged and cut it, its units to be put again from the
	// CommitLog; -1 when it ended cleanly. Set at Open.
	rebuildFrom int64

	// cur is the file Put appends to; only the writer uses it.
	cur *mappedfile.File
	// prepareAt is the write position in a file from which Put has the
	// rest of the file and the next one made ready in the background: a
	// sixteenth of the file, so that queues that fill slowly cost nothing.
	// preparedFor is the last file it did that for.
	prepareAt   int
	preparedFor *mappedfile.File

	// mu serializes changes to min and to the set of files other than
	// appends: the first Put of an empty queue, CorrectMinOffset,
	// DeleteExpired and Truncate.
	mu     sync.Mutex
	closed atomic.Bool
}

// Open opens (creating if needed) the ConsumeQueue of topic and queueID in
// {root}/{topic}/{queueID}/, maps its files and recovers its end as RocketMQ
// does: starting at the third-last file it scans to the first unit that is
// not valid, counts everything before as written and truncates the rest.
// A unit that starts before the previous one ends also ends the scan (a torn
// write). MinOffset is then the first unit that is not a placeholder; the
// store corrects it to the CommitLog with CorrectMinOffset.
func Open(root, topic string, queueID int32, opts Options) (*Queue, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("consumequeue: open %s/%d: %w", topic, queueID, err)
	}
	if err := checkName(topic, queueID); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, topic, strconv.Itoa(int(queueID)))
	q := &Queue{
		topic:     topic,
		queueID:   queueID,
		dir:       dir,
		fileSize:  opts.FileUnits * UnitSize,
		prepareAt: max(opts.FileUnits/16, 1) * UnitSize,
		log:       opts.Logger.With("topic", topic, "queueId", queueID),

		rebuildFrom: -1,
	}
	files, err := mappedfile.OpenQueue(dir, q.fileSize, mappedfile.QueueOptions{
		Mapper: opts.Mapper, Sparse: true, Budget: opts.budget, Logger: q.log})
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open %s: %w", dir, err)
	}
	q.files = files
	if err := q.recover(); err != nil {
		return nil, errors.Join(fmt.Errorf("consumequeue: recover %s: %w", dir, err), files.Close())
	}
	return q, nil
}

// recover finds the end of valid units, truncates after it and sets the
// positions (ConsumeQueue.recover).
func (q *Queue) recover() error {
	files := q.files.Files()
	q.maxPhys.Store(-1)
	q.headPhys.Store(-1)
	if len(files) == 0 {
		return nil
	}
	if from := files[0].From(); from%int64(q.fileSize) != 0 {
		return fmt.Errorf("first file %s does not start at a multiple of the file size %d; were the files written with another FileUnits?",
			files[0].Path(), q.fileSize)
	}
	start := max(len(files)-3, 0)
	// One fd a file for the few reads below (files not mapped are read
	// with pread), closed when recovery is done: no mapping is made.
	for _, f := range append(files[start:], files[0]) {
		if err := f.OpenFD(); err != nil {
			return err
		}
		defer f.CloseFD()
	}
	end := files[start].From()
	var st scanState
	for _, f := range files[start:] {
		n, err := scanFile(f, &st)
		if err != nil {
			return err
		}
		end = f.From() + int64(n)*UnitSize
		if n*UnitSize < f.Size() {
			break
		}
	}
	damaged, err := q.holdsUnitsAfter(end)
	if err != nil {
		return err
	}
	if last := files[len(files)-1]; end < last.From()+int64(last.Size()) {
		q.log.Debug("recovered consume queue end", "offset", end/UnitSize)
	}
	cut := q.files.SetEnd // nothing but zeros after end: nothing to write
	if damaged {
		cut = q.files.Truncate
	}
	if err := cut(end); err != nil {
		return err
	}
	q.cur = q.files.Last()
	q.max.Store(end / UnitSize)
	q.maxPhys.Store(q.lastRealEnd())
	q.min.Store(q.firstReal())
	q.rebuildFrom = -1
	if damaged {
		q.rebuildFrom = max(q.maxPhys.Load(), 0)
		q.log.Warn("consume queue damaged: cut at its first bad unit, to be rebuilt from the commit log",
			"queueOffset", end/UnitSize, "commitLogOffset", q.rebuildFrom)
	}
	return nil
}

// holdsUnitsAfter reports whether any byte after the queue position end
// (a byte offset in the queue's files) is not zero: the scan stopped at a
// bad unit, not at the end of what was written.
func (q *Queue) holdsUnitsAfter(end int64) (bool, error) {
	for _, f := range q.files.Files() {
		if f.From()+int64(f.Size()) <= end {
			continue
		}
		// Only the parts of the file that hold data: in proportion to what
		// was written, not to the file's 6,000,000 bytes.
		nonZero, err := f.NonZeroAfter(int(max(end-f.From(), 0)))
		if err != nil || nonZero {
			return nonZero, err
		}
	}
	return false, nil
}

// RebuildFrom is the CommitLog offset from which this queue must be built
// again: Open found a bad unit with more written after it (a torn write or
// damage), cut the queue there, and the units from this offset on are to
// be put again from the CommitLog. -1 when the queue ended cleanly.
func (q *Queue) RebuildFrom() int64 { return q.rebuildFrom }

// scanFile runs scanUnits over the file from its start until a unit
// stops it, reading in chunks (ReadAt: by pread for a file under a budget
// that is not mapped), so that opening a queue reads what was written and
// one chunk more, not the whole file. A failed read is an error.
func scanFile(f *mappedfile.File, st *scanState) (int, error) {
	var buf [scanChunk * UnitSize]byte
	n := 0
	for n*UnitSize+UnitSize <= f.Size() {
		got, err := f.ReadAt(buf[:], n*UnitSize)
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", f.Path(), err)
		}
		k := scanUnits(buf[:got], st)
		n += k
		if k < scanChunk {
			break // a unit stopped the scan, or the file ended
		}
	}
	return n, nil
}

// scanChunk is how many units recovery reads at a time.
const scanChunk = 410 // 8,200 bytes: two pages and a bit, whole units

// firstReal is the index of the first unit of the first file that is not a
// placeholder, or the end of the first file's units when all are.
func (q *Queue) firstReal() int64 {
	f := q.files.First()
	if f == nil {
		return q.max.Load()
	}
	var buf [scanChunk * UnitSize]byte
	for i := 0; i+UnitSize <= f.Size(); {
		got, err := f.ReadAt(buf[:], i)
		if err != nil || got < UnitSize {
			return (f.From() + int64(i)) / UnitSize
		}
		for j := 0; j+UnitSize <= got; j, i = j+UnitSize, i+UnitSize {
			if u := decodeUnit(buf[j:]); !u.isPlaceholder() {
				if u.valid() {
					q.headPhys.Store(u.Offset)
				}
				return (f.From() + int64(i)) / UnitSize
			}
		}
	}
	return (f.From() + int64(f.Size())) / UnitSize
}

// lastRealEnd is end() of the last unit, or -1 when there is no unit or the
// last one is a placeholder (then all are).
func (q *Queue) lastRealEnd() int64 {
	u, ok := q.unitAt(q.max.Load() - 1)
	if !ok || u.isPlaceholder() {
		return -1
	}
	return u.end()
}

// Topic is the queue's topic.
func (q *Queue) Topic() string { return q.topic }

// QueueID is the queue's id within its topic.
func (q *Queue) QueueID() int32 { return q.queueID }

// Dir is the queue's folder, {root}/{topic}/{queueId}.
func (q *Queue) Dir() string { return q.dir }

// MinOffset is the index of the first unit readers may read
// (getMinOffsetInQueue): units before it are placeholders or point to
// CommitLog data that has been deleted.
func (q *Queue) MinOffset() int64 { return q.min.Load() }

// MaxOffset is the index the next unit will get (getMaxOffsetInQueue).
func (q *Queue) MaxOffset() int64 { return q.max.Load() }

// MaxPhysicOffset is the CommitLog offset just after the message of the last
// unit (getMaxPhysicOffset), -1 when the queue has no unit. Put skips units
// whose message ends at or before it.
func (q *Queue) MaxPhysicOffset() int64 { return q.maxPhys.Load() }

// MinPhysicOffset is the CommitLog offset of the unit at MinOffset, or -1
// when the queue has no readable unit.
func (q *Queue) MinPhysicOffset() int64 {
	if u, ok := q.Unit(q.min.Load()); ok {
		return u.Offset
	}
	return -1
}

// LastUnit returns the unit at MaxOffset-1, if readers may read it
// (getLatestUnit).
func (q *Queue) LastUnit() (Unit, bool) { return q.Unit(q.max.Load() - 1) }

// Put appends the unit of the message with queue offset queueOffset
// (putMessagePositionInfo). Only the single writer may call it. It does
// nothing and returns nil when the message ends at or before
// MaxPhysicOffset (a re-dispatch after recovery) or when queueOffset is
// below MaxOffset (a repeat, logged). On an empty queue it starts the first
// file at the file holding queueOffset, fills the slots before it with
// placeholder units and sets MinOffset to queueOffset. A queueOffset beyond
// MaxOffset returns an error wrapping ErrGap and writes nothing; RocketMQ
// logs and writes the unit anyway, which puts it at the wrong index.
func (q *Queue) Put(u Unit, queueOffset int64) error {
	if !u.valid() || u.isPlaceholder() || queueOffset < 0 || queueOffset > math.MaxInt64/UnitSize {
		return fmt.Errorf("consumequeue: %s/%d: put %+v at queue offset %d: %w",
			q.topic, q.queueID, u, queueOffset, ErrInvalidUnit)
	}
	if u.end() <= q.maxPhys.Load() {
		return nil
	}
	if q.closed.Load() {
		return ErrClosed
	}
	f := q.cur
	if f == nil {
		var err error
		if f, err = q.start(queueOffset); err != nil {
			return err
		}
	}
	next := q.max.Load()
	switch {
	case queueOffset < next:
		q.log.Warn("consume queue built repeatedly; skipping the unit",
			"queueOffset", queueOffset, "maxOffset", next, "phyOffset", u.Offset)
		return nil
	case queueOffset > next:
		return fmt.Errorf("consumequeue: %s/%d: put queue offset %d, want %d (CommitLog offset %d): %w",
			q.topic, q.queueID, queueOffset, next, u.Offset, ErrGap)
	}
	if q.tailFull() {
		if err := q.writeTail(); err != nil {
			return err
		}
	}
	if f.IsFull() {
		var err error
		if f, err = q.files.LastOrCreate(next * UnitSize); err != nil {
			return fmt.Errorf("consumequeue: %s/%d: new file at unit %d: %w", q.topic, q.queueID, next, err)
		}
		q.cur = f
	}
	if err := q.put(f, next, u); err != nil {
		return err
	}
	if f != q.preparedFor && f.WrotePosition() >= q.prepareAt {
		q.preparedFor = f
		q.files.PrepareNext() // busy: the rest of this file and the next are faulted in meanwhile
	}
	if next == q.min.Load() {
		q.headPhys.Store(u.Offset)
	}
	q.maxPhys.Store(u.end())
	q.max.Store(next + 1)
	if q.onDirty != nil && !q.dirty.Load() && q.dirty.CompareAndSwap(false, true) {
		q.onDirty(q)
	}
	return nil
}

// start makes the first file of an empty queue, the one holding index, and
// fills the slots before index with placeholders (fillPreBlank).
func (q *Queue) start(index int64) (*mappedfile.File, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f := q.files.Last(); f != nil { // left by Truncate, or not empty after all
		q.cur = f
		return f, nil
	}
	f, err := q.files.LastOrCreate(index * UnitSize)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: %s/%d: first file at unit %d: %w", q.topic, q.queueID, index, err)
	}
	fill := int(index*UnitSize - f.From())
	if fill > 0 {
		err := q.write(f, 0, fill, func(w []byte) {
			for i := 0; i < fill; i += UnitSize {
				encodeUnit(w[i:], placeholder)
			}
		})
		if err != nil {
			// Leave the queue empty, as it was: the next Put starts it again.
			return nil, errors.Join(err, q.files.Restart(f.From()))
		}
	}
	if index > 0 {
		q.log.Info("consume queue starts at a non-zero offset", "offset", index, "placeholders", fill/UnitSize)
	}
	q.min.Store(index)
	q.max.Store(index)
	q.cur = f
	return f, nil
}

// write has disk allocated for n more bytes of f from its write position
// pos, fills them with fill and advances f: in a sparse file the disk
// comes first (a full disk is an error here, not a SIGBUS on the mapping),
// and under a map budget the file is held while it is written.
func (q *Queue) write(f *mappedfile.File, pos, n int, fill func(w []byte)) error {
	if err := f.Reserve(pos + n); err != nil {
		return fmt.Errorf("consumequeue: %s/%d: %w", q.topic, q.queueID, err)
	}
	sp, ok := f.Space()
	if !ok {
		return fmt.Errorf("consumequeue: %s/%d: file %s cannot be written: %w", q.topic, q.queueID, f.Path(),
			errors.Join(ErrClosed, f.MapError()))
	}
	fill(sp.Bytes()[:n])
	sp.Release()
	f.Advance(n)
	return nil
}

// put writes u at queue offset next into f: to the tail while f is not
// mapped (see tail.go), else through the mapping, once the tail is out.
func (q *Queue) put(f *mappedfile.File, next int64, u Unit) error {
	if f.PreferCopy() {
		return q.appendTail(f, next, u)
	}
	if err := q.writeTail(); err != nil {
		return err
	}
	pos := f.WrotePosition()
	if pos+UnitSize > f.Size() || f.From()+int64(pos) != next*UnitSize {
		return fmt.Errorf("consumequeue: %s/%d: file %s does not end at unit %d", q.topic, q.queueID, f.Path(), next)
	}
	return q.write(f, pos, UnitSize, func(w []byte) { encodeUnit(w, u) })
}

// Read copies up to len(dst) units into dst, starting at index and crossing
// files, and returns how many it copied. It does not allocate. An index
// outside [MinOffset, MaxOffset) returns 0 and exactly one of
// ErrOffsetTooSmall, ErrOffsetOverflowOne or ErrOffsetOverflowBadly
// (unwrapped, so == works). ErrOffsetTooSmall is also returned when the file
// holding index is deleted during the call.
func (q *Queue) Read(index int64, dst []Unit) (int, error) {
	hi := q.max.Load()
	switch {
	case index < q.min.Load():
		return 0, ErrOffsetTooSmall
	case index == hi:
		return 0, ErrOffsetOverflowOne
	case index > hi:
		return 0, ErrOffsetOverflowBadly
	}
	n := int(min(int64(len(dst)), hi-index))
	got := q.read(index, dst[:n])
	if got == 0 && n > 0 {
		return 0, ErrOffsetTooSmall
	}
	return got, nil
}

// read copies the units from index into dst as far as they are readable,
// without checking MinOffset.
func (q *Queue) read(index int64, dst []Unit) int {
	got := 0
	for got < len(dst) {
		off := (index + int64(got)) * UnitSize
		f := q.files.FindByOffset(off)
		if f == nil {
			break
		}
		pos := int(off - f.From())
		k := min(len(dst)-got, (f.ReadPosition()-pos)/UnitSize)
		if k <= 0 {
			n, retry := q.readTail(f, pos, dst[got:])
			if got += n; n == 0 && !retry {
				break
			}
			continue
		}
		if f.PreferCopy() {
			n := readCold(f, pos, dst[got:got+k])
			if got += n; n < k {
				break
			}
			continue
		}
		s, ok := f.Slice(pos, k*UnitSize)
		if !ok {
			break
		}
		b := s.Bytes()
		for i := range k {
			dst[got+i] = decodeUnit(b[i*UnitSize:])
		}
		s.Release()
		got += k
	}
	return got
}

// readCold copies the units at pos of a file that is not mapped into dst,
// by ReadAt (pread), a chunk at a time, and returns how many it copied.
func readCold(f *mappedfile.File, pos int, dst []Unit) int {
	var buf [readChunk * UnitSize]byte
	got := 0
	for got < len(dst) {
		k := min(len(dst)-got, readChunk)
		n, err := f.ReadAt(buf[:k*UnitSize], pos+got*UnitSize)
		k = n / UnitSize
		for i := range k {
			dst[got+i] = decodeUnit(buf[i*UnitSize:])
		}
		got += k
		if err != nil || k < min(len(dst)-got+k, readChunk) {
			break
		}
	}
	return got
}

// readChunk is how many units read copies at a time.
const readChunk = 64

// unitAt reads the unit at index if it is written, even below MinOffset.
func (q *Queue) unitAt(index int64) (Unit, bool) {
	if index < 0 || index >= q.max.Load() {
		return Unit{}, false
	}
	var one [1]Unit
	return one[0], q.read(index, one[:]) == 1
}

// Unit returns the unit at index if index is in [MinOffset, MaxOffset)
// and its file is still there.
func (q *Queue) Unit(index int64) (Unit, bool) {
	var one [1]Unit
	n, _ := q.Read(index, one[:])
	return one[0], n == 1
}

// Flush makes written units durable when at least leastPages pages of 4 KiB
// wait (any amount when leastPages is 0, always for a full file). Units in
// the tail (tail.go) are written out by a flush with leastPages 0 only.
func (q *Queue) Flush(leastPages int) error {
	if leastPages == 0 {
		// A tail is less than a page (tailMax): it waits for a full flush,
		// as a page written by fewer than leastPages would.
		if err := q.writeTail(); err != nil {
			return err
		}
	}
	if _, err := q.files.Flush(leastPages); err != nil {
		return fmt.Errorf("consumequeue: flush %s/%d: %w", q.topic, q.queueID, err)
	}
	return nil
}

// Close closes the queue's files without flushing. A Read running at the
// time finishes safely (files are reference-counted); later reads find no
// file and return ErrOffsetTooSmall or an ErrOffsetOverflow error. The
// writer must have stopped. Calls after the first return ErrClosed.
func (q *Queue) Close() error {
	if !q.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if err := errors.Join(q.writeTail(), q.files.Close()); err != nil {
		return fmt.Errorf("consumequeue: close %s/%d: %w", q.topic, q.queueID, err)
	}
	return nil
}

// Destroy closes the queue (if open) and deletes its folder with every file
// (ConsumeQueue.destroy). The writer must have stopped.
func (q *Queue) Destroy() error {
	err := q.Close()
	if errors.Is(err, ErrClosed) {
		err = nil
	}
	q.min.Store(0)
	q.max.Store(0)
	q.maxPhys.Store(-1)
	if rerr := os.RemoveAll(q.dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("consumequeue: destroy %s: %w", q.dir, rerr))
	}
	return err
}
