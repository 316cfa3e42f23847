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
	if len(data) == 0 {
		_, err := l.rawFileLocked(offset, false)
		return err
	}
	room, err := l.rawRoomLocked(offset, len(data))
	if err != nil {
		return err
	}
	return l.commitRawLocked(offset, copy(room, data))
}

// RawRoom returns room for n raw bytes at offset, as AppendRaw would write
// them (offset the write position; the n bytes within one file): the free
// part of the file, in its mapping or pool buffer, for a slave to read a
// master's bytes straight into (no copy through a buffer of its own).
// Nothing is published until CommitRaw. Only the single writer may use the
// room, and only until it calls CommitRaw or AppendRaw.
func (l *Log) RawRoom(offset int64, n int) ([]byte, error) {
	l.lock.Lock()
	defer l.lock.Unlock()
	return l.rawRoomLocked(offset, n)
}

// CommitRaw publishes k bytes written at offset into the room RawRoom
// returned, as AppendRaw does with the bytes it copies.
func (l *Log) CommitRaw(offset int64, k int) error {
	l.lock.Lock()
	defer l.lock.Unlock()
	return l.commitRawLocked(offset, k)
}

// rawFileLocked checks that offset is where raw bytes may go and returns
// the file they go to, made if create is set (nil, nil when the log is
// empty and create is not set). The caller holds the put lock.
func (l *Log) rawFileLocked(offset int64, create bool) (*mappedfile.File, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	fileSize := int64(l.opts.FileSize)
	if end := l.q.MaxWrotePosition(); end == 0 {
		if offset < 0 || offset%fileSize != 0 {
			return nil, fmt.Errorf("commitlog: raw append at %d to an empty log, not at a file start: %w", offset, ErrOffsetMismatch)
		}
		if !create {
			return nil, nil
		}
		if last := l.q.Last(); last != nil && last.From() != offset {
			if err := l.q.Restart(offset); err != nil {
				return nil, fmt.Errorf("commitlog: raw append at %d: start the empty log there: %w", offset, err)
			}
			l.cur = nil
			l.log.Info("commit log starts at the offset of the first bytes copied to it", "offset", offset)
		}
		l.raw.reset(offset)
	} else if offset != end {
		return nil, fmt.Errorf("commitlog: raw append at %d, but the log ends at %d: %w", offset, end, ErrOffsetMismatch)
	}
	if !create {
		return l.q.Last(), nil
	}
	f, err := l.q.LastOrCreate(offset)
	if err != nil {
		return nil, fmt.Errorf("commitlog: raw append at %d: %w", offset, err)
	}
	l.cur = f
	return f, nil
}

// rawRoomLocked is RawRoom; the caller holds the put lock.
func (l *Log) rawRoomLocked(offset int64, n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("commitlog: raw append of %d bytes at %d: %w", n, offset, ErrOffsetMismatch)
	}
	f, err := l.rawFileLocked(offset, true)
	if err != nil {
		return nil, err
	}
	w := f.Writable()
	if n > len(w) {
		return nil, fmt.Errorf("commitlog: raw append of %d bytes at %d crosses the end of file %s: %w",
			n, offset, mappedfile.FileName(f.From()), ErrOffsetMismatch)
	}
	return w[:n:n], nil
}

// commitRawLocked publishes k bytes written at offset, the write position
// of the current file, and follows their record heads. The caller holds
// the put lock.
func (l *Log) commitRawLocked(offset int64, k int) error {
	f := l.cur
	if f == nil || f.From()+int64(f.WrotePosition()) != offset || k < 0 || k > len(f.Writable()) {
		return fmt.Errorf("commitlog: commit of %d raw bytes at %d: not in the room given: %w", k, offset, ErrOffsetMismatch)
	}
	data := f.Writable()[:k]
	f.Advance(k)
	if ts := l.raw.scan(offset, data, f.From()+int64(l.opts.FileSize)); ts != 0 {
		f.SetStoreTimestamp(ts)
	}
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
