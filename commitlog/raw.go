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
// at offset, which must be the write position: the end of the log (0 in a
// log opened empty; a log with no file at all may start at any file start). data must fit in the file it starts
// in, as the frames of RocketMQ's HA transfer do (a master's file holds the
// same bytes, END_OF_FILE blank and zero tail included). The bytes are
// written verbatim: no record is stamped or checked, and the queue offsets
// are not advanced (a Log reopened rebuilds them from the records).
func (l *Log) AppendRaw(offset int64, data []byte) error {
	l.lock.Lock()
	defer l.lock.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if l.q.Last() == nil {
		if offset < 0 || offset%int64(l.opts.FileSize) != 0 {
			return fmt.Errorf("commitlog: raw append at %d to an empty log, not at a file start: %w", offset, ErrOffsetMismatch)
		}
	} else if end := l.q.MaxWrotePosition(); offset != end {
		if end == 0 && l.q.Last().From() == 0 {
			// Open made an empty first file at 0: only offset 0 follows it.
			return fmt.Errorf("commitlog: raw append at %d to an empty log, which takes bytes from offset 0 only: %w", offset, ErrOffsetMismatch)
		}
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
