package commitlog

import (
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// ErrOffsetMismatch refuses raw bytes that do not start at the write
// position: they would not extend the log as a prefix of the source's.
var ErrOffsetMismatch = errors.New("commitlog: offset is not the write position")

// AppendRaw writes data, bytes copied from another CommitLog (a master's),
// at offset, which must be the write position: the end of the log. A log
// that holds nothing yet (opened empty, or with no file at all) takes any
// file start: its empty files are dropped and it starts there, as a slave
// does when its master's CommitLog no longer starts at 0
// (DefaultHAConnection sends an empty slave the master's last file). data
// must fit in the file it starts in, as the frames of RocketMQ's HA
// transfer do (a master's file holds the same bytes, END_OF_FILE blank and
// zero tail included). The bytes are written verbatim: no record is
// stamped or checked, and the queue offsets are not advanced (a Log
// reopened rebuilds them from the records). The record heads are followed
// as they pass, so that LastStoreTimestamp is the store time of the last
// whole record appended, and DropPartialRecord knows where the last one
// ends.
func (l *Log) AppendRaw(offset int64, data []byte) error {
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	fileSize := int64(l.opts.FileSize)
	if end := l.q.MaxWrotePosition(); end == 0 {
		if offset < 0 || offset%fileSize != 0 {
			return fmt.Errorf("commitlog: raw append at %d to an empty log, not at a file start: %w", offset, ErrOffsetMismatch)
		}
		if last := l.q.Last(); last != nil && last.From() != offset {
			if len(data) == 0 {
				return nil // nothing to start the log with yet
			}
			if err := l.q.Restart(offset); err != nil {
				return fmt.Errorf("commitlog: raw append at %d: start the empty log there: %w", offset, err)
			}
			l.cur = nil
			l.log.Info("commit log starts at the offset of the first bytes copied to it", "offset", offset)
		}
		l.raw.reset(offset)
	} else if offset != end {
		return fmt.Errorf("commitlog: raw append at %d, but the log ends at %d: %w", offset, end, ErrOffsetMismatch)
	}
	if len(data) == 0 {
		return nil
	}
	f, err := l.q.LastOrCreate(offset)
	if err != nil {
		return fmt.Errorf("commitlog: raw append at %d: %w", offset, err)
	}
	l.cur = f
	if !f.Append(data) {
		return fmt.Errorf("commitlog: raw append of %d bytes at %d crosses the end of file %s: %w",
			len(data), offset, mappedfile.FileName(f.From()), ErrOffsetMismatch)
	}
	l.scanRaw(f, offset, data)
	return nil
}

// scanRaw follows the record heads in data, just appended to f at offset.
func (l *Log) scanRaw(f *mappedfile.File, offset int64, data []byte) {
	if ts := l.raw.scan(offset, data, f.From()+int64(l.opts.FileSize)); ts != 0 {
		f.SetStoreTimestamp(ts)
	}
}

// RawSpace returns the free rest of the file a raw append at offset goes
// to (making the next file if the last is full), for the single writer of
// raw bytes to fill before it publishes them with CommitRaw: AppendRaw
// without the copy from a buffer. The bytes it writes there stay unseen,
// and must be zeroed again if never committed. offset must be the end of
// a log that holds something already: an empty log takes its first bytes
// with AppendRaw, which chooses where it starts. Release the space when
// done.
func (l *Log) RawSpace(offset int64) (mappedfile.Space, error) {
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return mappedfile.Space{}, ErrClosed
	}
	if end := l.q.MaxWrotePosition(); end == 0 || offset != end {
		return mappedfile.Space{}, fmt.Errorf("commitlog: raw space at %d, but the log ends at %d: %w", offset, end, ErrOffsetMismatch)
	}
	f, err := l.q.LastOrCreate(offset)
	if err != nil {
		return mappedfile.Space{}, fmt.Errorf("commitlog: raw space at %d: %w", offset, err)
	}
	sp, ok := f.Space()
	if !ok {
		return mappedfile.Space{}, fmt.Errorf("commitlog: raw space at %d: %w", offset, ErrClosed)
	}
	l.cur = f
	return sp, nil
}

// CommitRaw publishes n bytes written at offset into the space RawSpace
// returned for offset, as AppendRaw would have appended them.
func (l *Log) CommitRaw(offset int64, n int) error {
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	f := l.q.Last()
	if end := l.q.MaxWrotePosition(); f == nil || offset != end || f.From()+int64(f.WrotePosition()) != offset {
		return fmt.Errorf("commitlog: raw commit at %d, but the log ends at %d: %w", offset, end, ErrOffsetMismatch)
	}
	w := f.Writable()
	if n < 0 || n > len(w) {
		return fmt.Errorf("commitlog: raw commit of %d bytes at %d crosses the end of file %s: %w",
			n, offset, mappedfile.FileName(f.From()), ErrOffsetMismatch)
	}
	f.Advance(n)
	l.scanRaw(f, offset, w[:n])
	return nil
}

// DropPartialRecord cuts what AppendRaw wrote after the last whole record:
// the start of a record the master had not finished sending. A slave's
// store calls it before a clean close, so that the log it leaves holds
// whole records only (what a clean close promises recovery); the slave
// then reports where its last record ends, and the master sends the rest
// again. It does nothing when the log ends with a whole record, or when
// AppendRaw lost track of the records (bytes that were not records).
func (l *Log) DropPartialRecord() error {
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	next, end := l.raw.next, l.q.MaxWrotePosition()
	if next < 0 || next >= end {
		return nil
	}
	if err := l.q.Truncate(next); err != nil {
		return fmt.Errorf("commitlog: drop the partial record at %d: %w", next, err)
	}
	l.cur = nil
	l.raw.reset(next)
	l.log.Info("dropped the start of a record not yet copied whole", "offset", next, "bytes", end-next)
	return nil
}

// ReadFrom returns the readable bytes from offset to the end of the data
// in offset's file, at most max, without copying. At the end of the log it
// returns an empty Slice. The Slice pins the file: release it when done.
func (l *Log) ReadFrom(offset int64, max int) (mappedfile.Slice, error) {
	if offset == l.q.MaxOffset() {
		return mappedfile.Slice{}, nil
	}
	f := l.q.FindByOffset(offset)
	if f == nil {
		return mappedfile.Slice{}, fmt.Errorf("commitlog: read from %d: %w", offset, ErrNotFound)
	}
	s, ok := f.SliceFrom(int(offset - f.From()))
	if !ok {
		return mappedfile.Slice{}, fmt.Errorf("commitlog: read from %d: %w", offset, ErrNotFound)
	}
	if len(s.Bytes()) > max {
		s = s.Prefix(max)
	}
	return s, nil
}

// WriteOffset is the end of the bytes written, which MaxOffset passes only
// once pool buffers are committed: where the next append goes.
func (l *Log) WriteOffset() int64 { return l.q.MaxWrotePosition() }
