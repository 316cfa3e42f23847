package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// CorruptionError is Recover's refusal: the log is damaged where it had
// been flushed, not torn by a crash (see Recover). Nothing was changed on
// disk. It wraps ErrCorrupt and what is wrong with the record.
type CorruptionError struct {
	// File is the path of the file that holds the bad record.
	File string
	// Offset is the log offset of the bad record; FileOffset, its position
	// within File.
	Offset, FileOffset int64
	// Next is the log offset of the first valid record after it, -1 if
	// none was found.
	Next int64
	// Reason says why the damage is not a torn tail.
	Reason string
	// MovedAside lists where Options.Repair moved the damaged files.
	MovedAside []string
	// Err is what is wrong with the record.
	Err error
}

func (e *CorruptionError) Error() string {
	after := "no valid record follows"
	if e.Next >= 0 {
		after = fmt.Sprintf("valid records follow from offset %d", e.Next)
	}
	return fmt.Sprintf("commitlog: corrupt record in %s at offset %d (byte %d of the file), not a torn tail: %s; %s: %v; "+
		"nothing was changed: restore the file, or open with the repair switch, which moves the damaged files aside and opens with the records before the damage",
		e.File, e.Offset, e.FileOffset, e.Reason, after, e.Err)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// found is a valid record found past the end of a recovery scan.
type found struct {
	offset    int64
	storeTime int64
}

// findValidAfter returns the first record after offset end that passes
// every check (lengths, its own physical offset, body CRC and whole
// fields), in end's file or a later one, looking at no more than near bytes
// of each file (0: all of them). Records are found by their magic code, so
// a damaged length does not hide what follows it.
func (l *Log) findValidAfter(end int64, near int) (found, bool) {
	for _, f := range l.q.Files() {
		if f.From()+int64(f.Size()) <= end {
			continue
		}
		start := 0
		if f.From() <= end {
			start = int(end-f.From()) + 1
		}
		s, ok := f.SliceFrom(0)
		if !ok {
			continue
		}
		b := s.Bytes()
		if near > 0 && start+near < len(b) {
			b = b[:start+near]
		}
		at, ts, ok := findRecord(b, start, f.From())
		s.Release()
		if ok {
			return found{offset: f.From() + int64(at), storeTime: ts}, true
		}
	}
	return found{}, false
}

// magicPrefix is what MagicV1 and MagicV2 share: their first three bytes.
var magicPrefix = []byte{0xDA, 0xA3, 0x20}

// posMagic is where a record's magic code is.
const posMagic = 4

// findRecord returns the position in b, from start on, of the first valid
// record, b being a file that starts at log offset base, and its store time.
func findRecord(b []byte, start int, base int64) (int, int64, bool) {
	for p := start + posMagic; p < len(b); {
		i := bytes.Index(b[p:], magicPrefix)
		if i < 0 {
			return 0, 0, false
		}
		mp := p + i // where a magic may start
		p = mp + 1
		at := mp - posMagic
		if mp+3 >= len(b) || b[mp+3] != 0xA7 && b[mp+3] != 0xAB {
			continue
		}
		r, err := message.Parse(b[at:])
		if err != nil || r.PhysicalOffset() != base+int64(at) || r.CheckCRC() != nil || r.CheckWhole() != nil {
			continue
		}
		return at, r.StoreTimestamp(), true
	}
	return 0, 0, false
}

// sectorSize is the unit a disk writes whole or not at all: a write cut
// short by a crash loses whole sectors (etcd's wal uses the same 512).
const sectorSize = 512

// showsTear reports whether the bad record at offset end looks like a
// write cut short rather than damaged: its header is zeros, it ends in
// zeros (a put never ends a record with more than the two zero bytes of an
// empty properties length), its part in its first sector is zeros, or a
// whole sector within it is zeros. Its
// TOTALSIZE may be what is damaged, so the record is taken to reach the
// first of: offset limit (the next valid record), an END_OF_FILE record,
// the end of its file, nearEnd bytes.
func (l *Log) showsTear(end, limit int64) bool {
	f := l.q.FindByOffset(end)
	if f == nil {
		return true
	}
	s, ok := f.SliceFrom(0)
	if !ok {
		return true
	}
	defer s.Release()
	b := s.Bytes()
	pos := int(end - f.From())
	stop := min(int64(len(b)), limit-f.From(), int64(pos)+nearEnd)
	size, magic, ok := message.PeekHeader(b[pos:stop])
	if !ok || size == 0 && magic == 0 {
		return true
	}
	for q := pos + 8; q+8 <= int(stop); q++ { // the END_OF_FILE record after it, if any
		if binary.BigEndian.Uint32(b[q+4:]) == blankMagicBits && int(binary.BigEndian.Uint32(b[q:])) == len(b)-q {
			stop = int64(q)
			break
		}
	}
	rec := b[pos:stop]
	if len(rec)-len(bytes.TrimRight(rec, "\x00")) > 2 {
		return true
	}
	if head := rec[:min(len(rec), sectorSize-pos%sectorSize)]; allZero(head) && (len(head) >= 4 || int64(size) != limit-end) {
		// It starts in a sector that was never written. When fewer than
		// four bytes of it are there, TOTALSIZE spans the sector's end: a
		// lost sector leaves only its low bytes, a size that does not reach
		// the next valid record (a flip elsewhere leaves the size whole).
		return true
	}
	for lo := (pos + sectorSize - 1) / sectorSize * sectorSize; lo+sectorSize <= pos+len(rec); lo += sectorSize {
		if allZero(b[lo : lo+sectorSize]) {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// moveAside is the repair of Options.Repair: it closes the files, renames
// the one holding the bad record and every later one aside (name +
// ".damaged-" + UTC time), makes a new file in place of the first holding
// a copy of its records before the bad one, and opens the files again.
// Nothing is deleted.
func (l *Log) moveAside(ce *CorruptionError) error {
	dir := l.q.Dir()
	var damaged []*mappedfile.File
	for _, f := range l.q.Files() {
		if f.From()+int64(f.Size()) > ce.Offset {
			damaged = append(damaged, f)
		}
	}
	if len(damaged) == 0 {
		return errors.New("no file holds the bad record")
	}
	first, keep := damaged[0].Path(), int(ce.Offset-damaged[0].From())
	if err := l.q.Close(); err != nil {
		return err
	}
	stamp := time.Now().UTC().Format("20060102T150405.000")
	for _, f := range damaged {
		aside := asideName(f.Path(), stamp)
		if err := os.Rename(f.Path(), aside); err != nil {
			return err
		}
		ce.MovedAside = append(ce.MovedAside, aside)
	}
	if err := mappedfile.SyncDir(dir); err != nil {
		return err
	}
	if keep > 0 {
		if err := copyHead(ce.MovedAside[0], first, keep, l.opts.FileSize); err != nil {
			return err
		}
	}
	q, err := l.openQueue(dir)
	if err != nil {
		return err
	}
	l.q = q
	return nil
}

// asideName is path with the suffix ".damaged-"+stamp, and a counter if
// that name is taken. It does not parse as a file of the log.
func asideName(path, stamp string) string {
	name := path + ".damaged-" + stamp
	for i := 1; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s.damaged-%s.%d", path, stamp, i)
	}
}

// copyHead makes a new file of size bytes at dst holding the first n bytes
// of src, durably.
func copyHead(src, dst string, n, size int) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst) // our own partial copy; the original is aside
		}
	}()
	if err := mappedfile.Preallocate(out, int64(size)); err != nil {
		return err
	}
	if _, err := io.CopyN(out, in, int64(n)); err != nil {
		return fmt.Errorf("copy the intact records of %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		return err
	}
	return mappedfile.SyncDir(filepath.Dir(dst))
}
