package commitlog

import (
	"fmt"
	"io"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// Iterator walks the records of a Log from an offset. It stops cleanly at
// the readable end, skips END_OF_FILE padding to the next file, and stops
// with an error at the first record that fails its checks:
//
//	it := l.Iterate(from, true)
//	defer it.Close()
//	for it.Next() {
//		rec := it.Record() // valid until the next call to Next or Close
//	}
//	if err := it.Err(); err != nil { ... } // it.Offset() is where it stopped
type Iterator struct {
	l        *Log
	checkCRC bool

	off  int64            // offset of the next record to read
	file *mappedfile.File // file of cur
	cur  mappedfile.Slice // readable bytes of file from base
	base int64            // offset of cur's first byte
	rec  message.Record
	at   int64 // offset of rec
	err  error
}

// Iterate returns an Iterator over the records from offset from, which must
// be the start of a record. checkCRC also checks every body CRC, as
// recovery does; reading for dispatch does not.
func (l *Log) Iterate(from int64, checkCRC bool) *Iterator {
	it := new(Iterator)
	it.Reset(l, from, checkCRC)
	return it
}

// Reset closes it and points it at from in l, as Iterate(from, checkCRC)
// would: a caller that iterates often keeps one Iterator instead of
// allocating one each time.
func (it *Iterator) Reset(l *Log, from int64, checkCRC bool) {
	it.Close()
	*it = Iterator{l: l, checkCRC: checkCRC, off: from}
}

// Next moves to the next record and reports whether there is one.
func (it *Iterator) Next() bool {
	it.rec = nil
	for it.err == nil {
		if it.file == nil && !it.openFile() {
			return false
		}
		pos := int(it.off - it.base)
		b := it.cur.Bytes()[pos:]
		left := it.file.Size() - int(it.off-it.file.From()) // bytes to the end of the file
		if len(b) == 0 {
			if left == 0 {
				it.nextFile()
				continue
			}
			return false // the readable end
		}
		if left < blankMinLength { // too short for a record: padding
			it.off += int64(left)
			it.nextFile()
			continue
		}
		size, magic, ok := message.PeekHeader(b)
		if !ok {
			return it.fail(fmt.Errorf("%d bytes of a header: %w", len(b), io.ErrUnexpectedEOF))
		}
		if magic == message.MagicBlank {
			if int(size) != left {
				return it.fail(fmt.Errorf("END_OF_FILE record of %d bytes where %d are left", size, left))
			}
			it.off += int64(left)
			it.nextFile()
			continue
		}
		if size == 0 && magic == 0 {
			// Zeros: no record was written here (a file loaded whole at
			// open, before recovery cut it).
			return false
		}
		r, err := message.Parse(b)
		if err != nil {
			return it.fail(err)
		}
		if r.PhysicalOffset() != it.off {
			return it.fail(fmt.Errorf("record says it is at offset %d", r.PhysicalOffset()))
		}
		if it.checkCRC {
			if err := r.CheckCRC(); err != nil {
				return it.fail(err)
			}
			if err := r.CheckWhole(); err != nil {
				return it.fail(err)
			}
		}
		it.rec, it.at = r, it.off
		it.off += int64(len(r))
		return true
	}
	return false
}

// openFile takes a reference on the file holding it.off.
func (it *Iterator) openFile() bool {
	f := it.l.q.FindByOffset(it.off)
	if f == nil {
		return false
	}
	s, ok := f.SliceFrom(0)
	if !ok || it.off-f.From() > int64(len(s.Bytes())) {
		s.Release()
		return false
	}
	it.file, it.cur, it.base = f, s, f.From()
	return true
}

func (it *Iterator) nextFile() {
	it.cur.Release()
	it.file, it.cur = nil, mappedfile.Slice{}
	if it.off%int64(it.l.opts.FileSize) != 0 { // land on the next file's start
		it.off += int64(it.l.opts.FileSize) - it.off%int64(it.l.opts.FileSize)
	}
}

func (it *Iterator) fail(err error) bool {
	it.err = fmt.Errorf("commitlog: record at offset %d: %w: %w", it.off, ErrCorrupt, err)
	return false
}

// Record is the current record. It aliases the mapping and is valid until
// the next call to Next or Close.
func (it *Iterator) Record() message.Record { return it.rec }

// RecordOffset is the physical offset of the current record.
func (it *Iterator) RecordOffset() int64 { return it.at }

// Offset is where the next record would start: after a clean stop, the end
// of the valid data; after an error, the offset of the bad record.
func (it *Iterator) Offset() int64 { return it.off }

// Err is the error that stopped the iterator, or nil after a clean stop.
// It wraps ErrCorrupt.
func (it *Iterator) Err() error { return it.err }

// Close releases the iterator's hold on the current file.
func (it *Iterator) Close() {
	it.cur.Release()
	it.file, it.cur, it.rec = nil, mappedfile.Slice{}, nil
}
