package commitlog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

const fuzzFileSize = minFileSize

// validLog is the bytes of two files of a log holding n records.
func validLog(f *testing.F, n int) []byte {
	dir := f.TempDir()
	l, err := Open(dir, Options{FileSize: fuzzFileSize, StoreHost: testStoreHost, NoWarm: true})
	if err != nil {
		f.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(newMessage("TopicF", int32(i%2), make([]byte, 100+i*50))); err != nil {
			f.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	var out []byte
	for i := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, mappedfile.FileName(int64(i*fuzzFileSize))))
		if err != nil {
			b = make([]byte, fuzzFileSize)
		}
		out = append(out, b...)
	}
	return out
}

// FuzzRecover recovers logs of arbitrary bytes, as each kind of caller
// would. It must never panic; a refusal is a *CorruptionError that changed
// nothing; what it keeps is valid records only, and with Repair it opens.
func FuzzRecover(f *testing.F) {
	good := validLog(f, 12)
	f.Add(good, byte(0))
	for _, at := range []int{2, 5, 30, 200, 900, fuzzFileSize + 40} {
		b := append([]byte(nil), good...)
		b[at] ^= 0x21
		f.Add(b, byte(at))
	}
	f.Add(good[:fuzzFileSize+100], byte(3))
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		dir := t.TempDir()
		for i := 0; i*fuzzFileSize < len(data) && i < 2; i++ {
			file := make([]byte, fuzzFileSize)
			copy(file, data[i*fuzzFileSize:])
			if err := os.WriteFile(filepath.Join(dir, mappedfile.FileName(int64(i*fuzzFileSize))), file, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		durable := Durable{All: mode&1 != 0}
		if mode&2 != 0 {
			durable.Before = 1_700_000_000_000 + int64(mode)*1000
		}
		opts := Options{FileSize: fuzzFileSize, StoreHost: testStoreHost, NoWarm: true, SmallPages: true, ExternalRecovery: true, Repair: mode&4 != 0}
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		end, err := l.Recover(0, durable, nil)
		if err != nil {
			var ce *CorruptionError
			if opts.Repair || !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("recover: %v", err)
			}
			return
		}
		if end != l.MaxOffset() {
			t.Fatalf("recovered to %d, but the log ends at %d", end, l.MaxOffset())
		}
		it := l.Iterate(max(l.MinOffset(), 0), true)
		defer it.Close()
		for it.Next() {
		}
		if it.Err() != nil || it.Offset() != end {
			t.Fatalf("what recovery kept does not read back to %d: stopped at %d: %v", end, it.Offset(), it.Err())
		}
	})
}

// FuzzFindRecord searches arbitrary bytes for records: it must never panic,
// and what it finds must be a record that passes every check, at the
// offset it names.
func FuzzFindRecord(f *testing.F) {
	var good []byte // records at log offset 4096 on
	for i := range 5 {
		m := newMessage("TopicF", 0, make([]byte, 30*i))
		m.StoreHost = testStoreHost
		size, err := message.EncodedSize(m)
		if err != nil {
			f.Fatal(err)
		}
		m.PhysicalOffset = 4096 + int64(len(good))
		good = append(good, make([]byte, size)...)
		message.EncodeCRC(good[len(good)-size:], m, size)
	}
	f.Add(good, 0)
	f.Add(good, 1)
	f.Add(good[7:], 7)
	f.Add([]byte{0xDA, 0xA3, 0x20, 0xA7, 0, 0, 0, 0}, 0)
	f.Fuzz(func(t *testing.T, b []byte, start int) {
		if start < 0 || start > len(b) {
			return
		}
		at, _, ok := findRecord(b, start, 4096)
		if !ok {
			return
		}
		r, err := message.Parse(b[at:])
		if at < start || err != nil || r.PhysicalOffset() != 4096+int64(at) || r.CheckCRC() != nil || r.CheckWhole() != nil {
			t.Fatalf("found a record at %d (from %d) that does not pass its checks: %v", at, start, err)
		}
	})
}
