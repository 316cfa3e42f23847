package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// Errors returned by a Log. Test for them with errors.Is.
var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("commitlog: closed")
	// ErrTooLarge is wrapped by a *SizeError.
	ErrTooLarge = errors.New("commitlog: message too large")
	// ErrNotFound means no readable record is at the offset asked for: it
	// was deleted, or is not written yet.
	ErrNotFound = errors.New("commitlog: offset not readable")
	// ErrCorrupt means a record failed its checks.
	ErrCorrupt = errors.New("commitlog: corrupt record")
)

// SizeError refuses a message over a size limit; nothing was written.
type SizeError struct {
	What  string // "body" or "record"
	Size  int
	Limit int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("commitlog: message %s of %d bytes exceeds the limit of %d bytes", e.What, e.Size, e.Limit)
}

// Unwrap makes errors.Is(err, ErrTooLarge) true.
func (e *SizeError) Unwrap() error { return ErrTooLarge }

// blankMinLength is the room a file must keep after a record for the
// END_OF_FILE blank record (END_FILE_MIN_BLANK_LENGTH).
const blankMinLength = 8

// blankMagicBits is message.MagicBlank as the unsigned bits written.
const blankMagicBits = uint32(0xCBD43194)

// Log is RocketMQ's CommitLog. It is safe for concurrent use.
type Log struct {
	opts Options
	log  *slog.Logger
	q    *mappedfile.Queue
	pool *mappedfile.TransientStorePool // nil unless TransientStorePool

	clock *clock
	lock  *putLock
	// queueOffsets is RocketMQ's topicQueueTable: the next queue offset of
	// each topic/queue. Guarded by lock.
	queueOffsets map[queueKey]*int64
	// lastQueue and lastNext cache the queue of the last append, whose
	// producer usually sends the next message too. Guarded by lock.
	lastQueue queueKey
	lastNext  *int64
	// cur is the file appends go to. Guarded by lock.
	cur *mappedfile.File
	// raw follows the records of AppendRaw's bytes. Guarded by lock.
	raw rawTail

	closed atomic.Bool
}

// queueKey names one queue of one topic.
type queueKey struct {
	topic   string
	queueID int32
}

// AppendResult says where an append put its records (AppendMessageResult).
type AppendResult struct {
	// WroteOffset is the physical offset of the first record.
	WroteOffset int64
	// WroteBytes is the length of all records written, padding excluded.
	WroteBytes int
	// QueueOffset is the queue offset of the first message.
	QueueOffset int64
	// StoreTimestamp is the store time stamped on every record, in ms.
	StoreTimestamp int64
	// Messages is the number of records written.
	Messages int
}

// Open opens the CommitLog in dir, creating it if needed. Unless
// ExternalRecovery is set, existing files are scanned to find the end of
// valid data (see Recover), anything after it is cut off, and the queue
// offsets of every topic/queue are rebuilt from the records.
func Open(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", dir, err)
	}
	l := &Log{
		opts:         opts,
		log:          opts.Logger,
		lock:         newPutLock(opts.PutLock),
		queueOffsets: make(map[queueKey]*int64),
	}
	if opts.Now == nil {
		l.clock = newClock(clockTick, clockIdleTicks)
	}
	if opts.TransientStorePool {
		p, err := mappedfile.NewTransientStorePool(opts.PoolBuffers, opts.FileSize)
		if err != nil {
			return nil, fmt.Errorf("commitlog: open %s: %w", dir, err)
		}
		l.pool = p
	}
	q, err := l.openQueue(filepath.Clean(dir))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("commitlog: open %s: %w", dir, err), l.closePool())
	}
	l.q = q
	if !opts.ExternalRecovery {
		if err := l.recoverAll(); err != nil {
			return nil, errors.Join(fmt.Errorf("commitlog: open %s: %w", dir, err), q.Close(), l.closePool())
		}
	}
	return l, nil
}

// openQueue opens the files of the log in dir.
func (l *Log) openQueue(dir string) (*mappedfile.Queue, error) {
	mapper := l.opts.Mapper
	if mapper == nil {
		mapper = mappedfile.MmapMapper{HugePages: !l.opts.SmallPages}
	}
	return mappedfile.OpenQueue(dir, l.opts.FileSize, mappedfile.QueueOptions{
		Mapper:      mapper,
		Pool:        l.pool,
		Preallocate: true,
		Warm:        !l.opts.NoWarm,
		Logger:      l.opts.Logger,
	})
}

// now is the store time in ms.
func (l *Log) now() int64 {
	if l.clock != nil {
		return l.clock.nowMilli()
	}
	return l.optsNow()
}

func (l *Log) optsNow() int64 { return l.opts.Now().UnixMilli() }

func (l *Log) closePool() error {
	if l.pool == nil {
		return nil
	}
	return l.pool.Close()
}

// Append writes one message (putMessage). It stamps the store host, body
// CRC, store timestamp, physical offset and queue offset into m and then
// writes m as one record. A body over MaxMessageSize is refused with a
// *SizeError and nothing is written.
//
// Transaction PREPARED and ROLLBACK records get queue offset 0 and do not
// advance their queue, as in RocketMQ.
func (l *Log) Append(m *message.Message) (AppendResult, error) {
	size, err := l.prepare(m)
	if err != nil {
		return AppendResult{}, err
	}
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return AppendResult{}, ErrClosed
	}
	f, w := l.cur, []byte(nil)
	if f != nil {
		w = f.Writable()
	}
	if size+blankMinLength > len(w) { // also when there is no file yet
		if f, w, err = l.roomLocked(size); err != nil {
			return AppendResult{}, err
		}
	}
	now := l.now()
	l.placeLocked(m, f.From()+int64(f.WrotePosition()), now)
	n := message.EncodeCRC(w, m, size)
	f.Advance(n)
	if f.StoreTimestamp() != now { // a second barrier only when the ms moves
		f.SetStoreTimestamp(now)
	}
	return AppendResult{
		WroteOffset:    m.PhysicalOffset,
		WroteBytes:     n,
		QueueOffset:    m.QueueOffset,
		StoreTimestamp: now,
		Messages:       1,
	}, nil
}

// AppendBatch writes msgs as consecutive records in one file, under one
// hold of the put lock (a MessageExtBatch). Each message is stamped as by
// Append. If any message is refused, nothing is written.
func (l *Log) AppendBatch(msgs []*message.Message) (AppendResult, error) {
	if len(msgs) == 0 {
		return AppendResult{}, nil
	}
	var sizesBuf [32]int // on the stack for batches up to 32
	sizes := sizesBuf[:0]
	total := 0
	for _, m := range msgs {
		size, err := l.prepare(m)
		if err != nil {
			return AppendResult{}, err
		}
		sizes = append(sizes, size)
		total += size
	}
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return AppendResult{}, ErrClosed
	}
	f, w, err := l.roomLocked(total)
	if err != nil {
		return AppendResult{}, err
	}
	now := l.now()
	at := f.From() + int64(f.WrotePosition())
	pos := 0
	for i, m := range msgs {
		l.placeLocked(m, at+int64(pos), now)
		pos += message.EncodeCRC(w[pos:], m, sizes[i])
	}
	f.Advance(pos)
	f.SetStoreTimestamp(now)
	return AppendResult{
		WroteOffset:    at,
		WroteBytes:     pos,
		QueueOffset:    msgs[0].QueueOffset,
		StoreTimestamp: now,
		Messages:       len(msgs),
	}, nil
}

// prepare checks m's size and stamps the store host. The body CRC is
// computed under the lock, as the body is copied (message.EncodeCRC): one
// pass over the body instead of two.
func (l *Log) prepare(m *message.Message) (int, error) {
	if len(m.Body) > l.opts.MaxMessageSize {
		return 0, &SizeError{What: "body", Size: len(m.Body), Limit: l.opts.MaxMessageSize}
	}
	m.StoreHost = l.opts.StoreHost
	size, err := message.EncodedSize(m)
	if err != nil {
		return 0, fmt.Errorf("commitlog: %w", err)
	}
	if limit := l.opts.FileSize - blankMinLength; size > limit {
		return 0, &SizeError{What: "record", Size: size, Limit: limit}
	}
	return size, nil
}

// roomLocked returns the file to write size bytes to and its free tail,
// closing the current file with a blank record when they do not fit.
func (l *Log) roomLocked(size int) (*mappedfile.File, []byte, error) {
	if size > l.opts.FileSize-blankMinLength {
		return nil, nil, &SizeError{What: "batch", Size: size, Limit: l.opts.FileSize - blankMinLength}
	}
	f := l.cur
	if f == nil || f.IsFull() {
		var err error
		if f, err = l.q.LastOrCreate(0); err != nil {
			return nil, nil, fmt.Errorf("commitlog: %w", err)
		}
		l.cur = f
	}
	w := f.Writable()
	if size+blankMinLength <= len(w) {
		return f, w, nil
	}
	// END_OF_FILE: the size of the rest of the file and the blank magic; the
	// rest stays zero. (Less than 8 bytes left only after a foreign writer.)
	if len(w) >= blankMinLength {
		binary.BigEndian.PutUint32(w[0:], uint32(len(w)))
		binary.BigEndian.PutUint32(w[4:], blankMagicBits)
	}
	f.Advance(len(w))
	f, err := l.q.LastOrCreate(0)
	if err != nil {
		return nil, nil, fmt.Errorf("commitlog: %w", err)
	}
	l.cur = f
	return f, f.Writable(), nil
}

// placeLocked stamps the offsets and store time of m and advances its queue.
func (l *Log) placeLocked(m *message.Message, phys, now int64) {
	m.PhysicalOffset = phys
	m.StoreTimestamp = now
	switch m.SysFlag & message.TxMask {
	case message.TxPrepared, message.TxRollback:
		m.QueueOffset = 0
		return
	}
	next := l.lastNext
	if next == nil || m.QueueID != l.lastQueue.queueID || m.Topic != l.lastQueue.topic {
		k := queueKey{m.Topic, m.QueueID}
		if next = l.queueOffsets[k]; next == nil {
			next = new(int64)
			l.queueOffsets[k] = next
		}
		l.lastQueue, l.lastNext = k, next
	}
	m.QueueOffset = *next
	*next++
}

// QueueOffset returns the next queue offset of topic/queueID.
func (l *Log) QueueOffset(topic string, queueID int32) int64 {
	l.lock.Lock()
	defer l.lock.Unlock()
	if next := l.queueOffsets[queueKey{topic, queueID}]; next != nil {
		return *next
	}
	return 0
}

// SetQueueOffset sets the next queue offset of topic/queueID, as the store
// does when it restores the table from its ConsumeQueues.
func (l *Log) SetQueueOffset(topic string, queueID int32, next int64) {
	l.lock.Lock()
	defer l.lock.Unlock()
	l.queueOffsets[queueKey{topic, queueID}] = &next
	l.lastNext = nil
}

// RemoveQueueOffsets forgets every queue of topic (a deleted topic).
func (l *Log) RemoveQueueOffsets(topic string) {
	l.lock.Lock()
	defer l.lock.Unlock()
	for k := range l.queueOffsets {
		if k.topic == topic {
			delete(l.queueOffsets, k)
		}
	}
	l.lastNext = nil
}

// Read returns size bytes at offset, all within one file, without copying.
// The Slice pins the file: release it when done.
func (l *Log) Read(offset int64, size int) (mappedfile.Slice, error) {
	f := l.q.FindByOffset(offset)
	if f == nil {
		return mappedfile.Slice{}, fmt.Errorf("commitlog: read %d bytes at %d: %w", size, offset, ErrNotFound)
	}
	s, ok := f.Slice(int(offset-f.From()), size)
	if !ok {
		return mappedfile.Slice{}, fmt.Errorf("commitlog: read %d bytes at %d: %w", size, offset, ErrNotFound)
	}
	return s, nil
}

// Reader reads a batch of byte ranges from a Log taking one reference per
// file instead of one per range, as GetMessage does for up to 32 records of
// one file. Reset it onto a Log before use; it can be kept and reset
// again, as a pooled GetResult does.
type Reader struct {
	l     *Log
	cur   mappedfile.Slice   // the readable bytes of the last file read, from its start
	base  int64              // offset of cur's first byte
	holds []mappedfile.Slice // every reference taken, cur's included
}

// Reset makes r read from l, releasing what it held.
func (r *Reader) Reset(l *Log) {
	r.Release()
	r.l = l
}

// Read returns size bytes at offset, all within one file, without copying.
// The bytes stay valid until r is released or reset.
func (r *Reader) Read(offset int64, size int) (mappedfile.Slice, error) {
	if s, ok := r.cur.Part(int(offset-r.base), size); ok {
		return s, nil
	}
	f := r.l.q.FindByOffset(offset)
	if f != nil {
		if cur, ok := f.SliceFrom(0); ok {
			r.cur, r.base = cur, f.From()
			r.holds = append(r.holds, cur)
			if s, ok := cur.Part(int(offset-r.base), size); ok {
				return s, nil
			}
		}
	}
	return mappedfile.Slice{}, fmt.Errorf("commitlog: read %d bytes at %d: %w", size, offset, ErrNotFound)
}

// Release drops every reference r took; the bytes it returned are invalid
// afterwards.
func (r *Reader) Release() {
	for _, s := range r.holds {
		s.Release()
	}
	clear(r.holds)
	r.holds, r.cur, r.base = r.holds[:0], mappedfile.Slice{}, 0
}

// ReadRecord returns the record at offset, checked for consistent lengths
// but not for CRC, and a Slice of exactly its bytes. The record aliases the
// Slice: release it when done.
func (l *Log) ReadRecord(offset int64) (message.Record, mappedfile.Slice, error) {
	f := l.q.FindByOffset(offset)
	if f == nil {
		return nil, mappedfile.Slice{}, fmt.Errorf("commitlog: record at %d: %w", offset, ErrNotFound)
	}
	s, ok := f.SliceFrom(int(offset - f.From()))
	if ok && len(s.Bytes()) == 0 {
		s.Release()
		ok = false
	}
	if !ok {
		return nil, mappedfile.Slice{}, fmt.Errorf("commitlog: record at %d: %w", offset, ErrNotFound)
	}
	r, err := message.Parse(s.Bytes())
	if err != nil {
		s.Release()
		return nil, mappedfile.Slice{}, fmt.Errorf("commitlog: record at %d: %w: %w", offset, ErrCorrupt, err)
	}
	return r, s.Prefix(len(r)), nil
}

// MinOffset is the offset of the first byte still stored, or -1 if none.
func (l *Log) MinOffset() int64 { return l.q.MinOffset() }

// MaxOffset is the end of the readable data.
func (l *Log) MaxOffset() int64 { return l.q.MaxOffset() }

// FlushedOffset is the offset up to which the log is durable.
func (l *Log) FlushedOffset() int64 { return l.q.FlushedWhere() }

// LastStoreTimestamp is the store time of the last record appended since
// Open, or 0.
func (l *Log) LastStoreTimestamp() int64 {
	if f := l.q.Last(); f != nil {
		return f.StoreTimestamp()
	}
	return 0
}

// FileSize is the size of each file.
func (l *Log) FileSize() int { return l.opts.FileSize }

// Files returns the files in order; the slice is a copy.
func (l *Log) Files() []*mappedfile.File { return l.q.Files() }

// WaitAllocated blocks until the next file, made in the background, is
// ready, so the next roll-over does not wait for it (start-up, benchmarks).
func (l *Log) WaitAllocated() { l.q.WaitAllocated() }

// DeleteFiles deletes files from the head of the log while del says so,
// never the last file and at most max files (0: no limit), as expiry does.
// Readers holding a Slice of a deleted file keep its bytes until they
// release it.
func (l *Log) DeleteFiles(del func(f *mappedfile.File) bool, max int) (int, error) {
	return l.q.DeleteHead(del, max)
}

// Commit copies pool buffers into the files (with TransientStorePool) when
// at least leastPages pages wait, and returns the committed offset.
func (l *Log) Commit(leastPages int) int64 { return l.q.Commit(leastPages) }

// Flush makes the log durable when at least leastPages pages wait (0: any)
// and returns the flushed offset. With TransientStorePool it commits first.
func (l *Log) Flush(leastPages int) (int64, error) {
	if l.pool != nil {
		l.q.Commit(0)
	}
	return l.q.Flush(leastPages)
}

// Close commits and flushes everything, then closes the files. Calls after
// the first return ErrClosed.
func (l *Log) Close() error {
	l.lock.Lock()
	closing := l.closed.CompareAndSwap(false, true)
	l.lock.Unlock()
	if !closing {
		return ErrClosed
	}
	if l.clock != nil {
		l.clock.close()
	}
	_, err := l.Flush(0)
	return errors.Join(err, l.q.Close(), l.closePool())
}
