package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"

	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// The journal of a config file ({file}.journal) holds the changes made
// since the file was last written whole, so that a change costs one
// append and one fsync however large the table is. It is ours: a Java
// broker reads only the JSON file, which a clean Close leaves complete
// (the journal then holds no change).
//
// Layout (big endian):
//
//	header  | magic "RSJ1" | snapshot length u64 | snapshot crc32c u32 |
//	record  | body length u32 | body crc32c u32 | body |
//	body    | kind u8 | counter i64 | timestamp i64 | stateVersion i64 |
//	        | key length u16 | key | value (JSON, compact) |
//
// The header names the JSON file the records apply to by its length and
// CRC: a journal whose header does not match the file on disk was written
// over another version of it (the file was rewritten whole since, by us
// or by a Java broker) and is ignored. Records are read up to the first
// that is torn or fails its CRC; each carries the table's data version
// after it.

// Kinds of journal records.
const (
	recPut   = 'P' // key's entry is value
	recDel   = 'D' // key has no entry
	recClear = 'C' // the table is empty (before a whole table follows)
	recAux   = 'A' // a table's secondary entry (the forbidden bits of a group)
)

const (
	journalMagic     = "RSJ1"
	journalHeaderLen = 16
	recHeaderLen     = 8
	recFixedLen      = 1 + 3*8 + 2
	// maxRecordLen bounds a record's body: larger lengths are garbage.
	maxRecordLen = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errJournal: a journal's bytes do not read as one.
var errJournal = errors.New("meta: bad journal")

// journalRecord is one decoded record; Key and Value alias the journal's
// bytes.
type journalRecord struct {
	Kind    byte
	Version protocol.DataVersion
	Key     string
	Value   []byte
}

// journalHeader returns the header of a journal over a snapshot.
func journalHeader(snapshot []byte) []byte {
	h := make([]byte, journalHeaderLen)
	copy(h, journalMagic)
	binary.BigEndian.PutUint64(h[4:], uint64(len(snapshot)))
	binary.BigEndian.PutUint32(h[12:], crc32.Checksum(snapshot, castagnoli))
	return h
}

// appendRecord appends a record to dst.
func appendRecord(dst []byte, kind byte, v protocol.DataVersion, key string, value []byte) []byte {
	n := recFixedLen + len(key) + len(value)
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, 0) // the CRC, below
	dst = append(dst, kind)
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.Counter))
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.Timestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.StateVersion))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(key)))
	dst = append(dst, key...)
	dst = append(dst, value...)
	body := dst[start+recHeaderLen:]
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(body, castagnoli))
	return dst
}

// readJournal checks the header of data against snapshot and calls apply
// for each whole record. It returns how many bytes are whole records
// (after the header), and whether the journal applies to snapshot at
// all (false: it is ignored, apply is never called). An error of apply
// stops it and is returned.
func readJournal(data, snapshot []byte, apply func(journalRecord) error) (valid int, matches bool, err error) {
	if len(data) < journalHeaderLen || string(data[:4]) != journalMagic {
		return 0, false, nil
	}
	if binary.BigEndian.Uint64(data[4:]) != uint64(len(snapshot)) ||
		binary.BigEndian.Uint32(data[12:]) != crc32.Checksum(snapshot, castagnoli) {
		return 0, false, nil
	}
	off := journalHeaderLen
	for {
		r, n, ok := decodeRecord(data[off:])
		if !ok {
			return off, true, nil
		}
		if err := apply(r); err != nil {
			return off, true, err
		}
		off += n
	}
}

// decodeRecord reads the record at the start of b: false if it is torn,
// fails its CRC, or its fields do not add up.
func decodeRecord(b []byte) (journalRecord, int, bool) {
	if len(b) < recHeaderLen {
		return journalRecord{}, 0, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if n < recFixedLen || n > maxRecordLen || len(b)-recHeaderLen < n {
		return journalRecord{}, 0, false
	}
	body := b[recHeaderLen : recHeaderLen+n]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return journalRecord{}, 0, false
	}
	r := journalRecord{Kind: body[0]}
	r.Version.Counter = int64(binary.BigEndian.Uint64(body[1:]))
	r.Version.Timestamp = int64(binary.BigEndian.Uint64(body[9:]))
	r.Version.StateVersion = int64(binary.BigEndian.Uint64(body[17:]))
	kl := int(binary.BigEndian.Uint16(body[25:]))
	if recFixedLen+kl > n {
		return journalRecord{}, 0, false
	}
	r.Key = string(body[recFixedLen : recFixedLen+kl])
	r.Value = body[recFixedLen+kl:]
	return r, recHeaderLen + n, true
}

// journal is the open journal file of one config file.
type journal struct {
	path   string
	fs     vfs.FS
	header []byte   // the header over the JSON file as it is on disk
	f      vfs.File // open for appending; nil: reopen (and repair) first
	size   int64    // bytes of header and whole records; 0: no journal over the file yet
}

// append writes recs at the end of the journal and syncs it. After an
// error the journal's tail is unknown: the next append rewrites it.
func (j *journal) append(recs []byte) error {
	if j.size == 0 {
		if err := j.start(); err != nil {
			return err
		}
	}
	if j.f == nil {
		if err := j.repair(); err != nil {
			return err
		}
	}
	if _, err := j.f.Write(recs); err != nil {
		j.drop()
		return fmt.Errorf("meta: append to %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		j.drop()
		return fmt.Errorf("meta: sync %s: %w", j.path, err)
	}
	j.size += int64(len(recs))
	return nil
}

// drop forgets the file handle after an error, so the next append
// repairs the journal first.
func (j *journal) drop() {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
}

// repair makes the journal file hold exactly its first j.size bytes (the
// header and the records known whole), durably, and opens it for
// appending: a failed write or sync may have left a torn record or lost
// pages, and records appended after those would never be read.
func (j *journal) repair() error {
	data, err := j.fs.ReadFile(j.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("meta: read %s: %w", j.path, err)
	}
	if int64(len(data)) != j.size {
		if int64(len(data)) < j.size {
			return fmt.Errorf("meta: %s holds %d bytes, %d were written: %w", j.path, len(data), j.size, errJournal)
		}
		if err := vfs.WriteFile(j.fs, j.path, data[:j.size]); err != nil {
			return fmt.Errorf("meta: %w", err)
		}
	}
	f, err := j.fs.OpenAppend(j.path)
	if err != nil {
		return fmt.Errorf("meta: open %s: %w", j.path, err)
	}
	j.f = f
	return nil
}

// reset starts the journal over snapshot, the JSON file just written
// whole: its header only, durably.
func (j *journal) reset(snapshot []byte) error {
	j.header = journalHeader(snapshot)
	return j.start()
}

// start replaces the journal file with its header alone, durably (a
// crash leaves the old journal, whose header no longer matches, or the
// new one).
func (j *journal) start() error {
	j.drop()
	j.size = 0
	if err := vfs.WriteFile(j.fs, j.path, j.header); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	j.size = int64(len(j.header))
	return nil
}

// close closes the file.
func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// validKey reports whether key fits a record.
func validKey(key string) bool { return len(key) <= math.MaxUint16 }
