package indexfile

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzOptions size the files FuzzOpen feeds: 4 slots and 8 entries, 216
// bytes.
var fuzzOptions = Options{HashSlots: 4, MaxIndexes: 8}

// validFile returns the bytes of an index file written by a Service.
func validFile(f *testing.F) []byte {
	dir := f.TempDir()
	s, err := Open(dir, fuzzOptions)
	if err != nil {
		f.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if err := s.Put("T", "a b", "", int64(i*100), t0+int64(i)*1000, 0); err != nil {
			f.Fatal(err)
		}
	}
	names := s.files[0].Path()
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(names)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// fuzzFile copies data into a buffer of the fuzz file size, zero-padded or
// cut, so that every input takes the full path whatever its length.
func fuzzFile(data []byte) []byte {
	b := make([]byte, fileSize(fuzzOptions.HashSlots, fuzzOptions.MaxIndexes))
	copy(b, data)
	return b
}

// fuzzSeeds adds a file written by a Service, an empty one and one whose
// chain cycles.
func fuzzSeeds(f *testing.F) {
	f.Add(validFile(f), "a", int64(0), int64(1)<<62)
	f.Add([]byte{}, "b", int64(0), int64(0))
	cycle := fuzzFile(nil)
	binary.BigEndian.PutUint32(cycle[offIndexCount:], 5)
	binary.BigEndian.PutUint32(cycle[HeaderSize+SlotSize:], 2)
	putEntry(cycle, 2, 5, 200, 0, 3)
	putEntry(cycle, 3, 5, 300, 0, 2)
	f.Add(cycle, "x", int64(-1), int64(1)<<62)
}

// FuzzSelect is the decoder fuzz: arbitrary bytes as the mapping of a File,
// read into memory once. Select on every slot and Put must never panic or read
// outside the file, and a walk visits each entry at most once.
func FuzzSelect(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, key string, begin, end int64) {
		// In memory (memMapper): the bytes are read once, and Put writes
		// no further than the buffer.
		path := filepath.Join(t.TempDir(), "20231114221320000")
		if err := os.WriteFile(path, fuzzFile(data), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := fuzzOptions
		opts.Mapper = memMapper{}
		file, err := OpenFile(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		for round := range 2 {
			for h := range int32(16) {
				got, err := file.Select(nil, h, 1000, begin, end)
				if err != nil || len(got) > fuzzOptions.MaxIndexes-1 {
					t.Fatalf("round %d select %d: %d offsets, err %v", round, h, len(got), err)
				}
			}
			_ = file.TimeMatched(begin, end)
			for i := range 3 {
				if err := file.Put(KeyHash("T", key), begin+int64(i), end); err != nil && !errors.Is(err, ErrFull) {
					t.Fatal(err)
				}
			}
		}
	})
}

// FuzzOpen feeds arbitrary bytes to Open as an index file on disk and
// queries it. Nothing may panic or hang. It does no writes, so that each
// run is quick and minimizing a new input does not take the whole run;
// FuzzSelect puts into corrupt files.
func FuzzOpen(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, key string, begin, end int64) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "20231114221320000"), fuzzFile(data), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, fuzzOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Query("T", key, 64, begin, end)
		if err != nil || len(got) > fuzzOptions.MaxIndexes-1 {
			t.Fatalf("query: %d offsets, err %v", len(got), err)
		}
		s.LastUpdate()
		if n, err := s.DeleteExpired(end); n != 0 || err != nil {
			t.Fatalf("deleted %d files (err %v), but never the last one", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
