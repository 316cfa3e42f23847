package commitlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// dirFiles maps the name of every file in dir to its bytes.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = b
	}
	return out
}

// appendFiles appends n messages of 3000 bytes, spread over several files,
// and closes the log.
func appendFiles(t *testing.T, dir string, n int) []AppendResult {
	t.Helper()
	l := openTestLog(t, dir, Options{})
	var results []AppendResult
	for i := range n {
		res, err := l.Append(newMessage("TopicT", 0, bytes.Repeat([]byte{'a' + byte(i%26)}, 3000)))
		require.NoError(t, err)
		results = append(results, res)
	}
	require.NoError(t, l.Close())
	return results
}

// flipAt flips a bit of the log in dir at offset off.
func flipAt(t *testing.T, dir string, off int64) {
	t.Helper()
	path := filepath.Join(dir, mappedfile.FileName(off-off%testFileSize))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	raw[off%testFileSize] ^= 0x40
	require.NoError(t, os.WriteFile(path, raw, 0o644))
}

// A bit flip in the middle of the log, with valid records after it in the
// same file and in later ones, is corruption, not a torn tail: Open refuses
// and changes nothing.
func TestLog_Reopen_RefusesCorruptRecordInTheMiddle(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(r AppendResult) int64
	}{
		{"body", func(r AppendResult) int64 { return r.WroteOffset + int64(r.WroteBytes) - 100 }},
		{"size", func(r AppendResult) int64 { return r.WroteOffset + 2 }},
		{"magic", func(r AppendResult) int64 { return r.WroteOffset + 5 }},
		{"physical offset", func(r AppendResult) int64 { return r.WroteOffset + 33 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			results := appendFiles(t, dir, 100)
			bad := results[30]
			require.Greater(t, results[99].WroteOffset/testFileSize, bad.WroteOffset/testFileSize, "files follow the bad one")
			flipAt(t, dir, tc.at(bad))
			before := dirFiles(t, dir)

			_, err := Open(dir, Options{FileSize: testFileSize, StoreHost: testStoreHost})
			require.ErrorIs(t, err, ErrCorrupt)
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, bad.WroteOffset, ce.Offset)
			require.Equal(t, filepath.Join(dir, mappedfile.FileName(bad.WroteOffset-bad.WroteOffset%testFileSize)), ce.File)
			require.Equal(t, bad.WroteOffset%testFileSize, ce.FileOffset)
			require.Equal(t, results[31].WroteOffset, ce.Next)
			require.Contains(t, err.Error(), ce.File)
			require.Equal(t, before, dirFiles(t, dir), "nothing on disk changed")
		})
	}
}

// With Repair, the damaged file and the later ones are moved aside whole
// and the log opens with the records before the damage.
func TestLog_Repair_MovesDamagedFilesAside(t *testing.T) {
	dir := t.TempDir()
	results := appendFiles(t, dir, 100)
	bad := results[30]
	flipAt(t, dir, bad.WroteOffset+int64(bad.WroteBytes)-100)
	before := dirFiles(t, dir)

	l := openTestLog(t, dir, Options{Repair: true})
	require.Equal(t, bad.WroteOffset, l.MaxOffset())
	require.Equal(t, int64(30), l.QueueOffset("TopicT", 0))
	for _, r := range results[:30] {
		_, s, err := l.ReadRecord(r.WroteOffset)
		require.NoError(t, err)
		s.Release()
	}
	res, err := l.Append(newMessage("TopicT", 0, []byte("after the repair")))
	require.NoError(t, err)
	require.Equal(t, bad.WroteOffset, res.WroteOffset)
	require.Equal(t, int64(30), res.QueueOffset)
	require.NoError(t, l.Close())

	after := dirFiles(t, dir)
	firstBad := bad.WroteOffset - bad.WroteOffset%testFileSize
	for name, b := range before {
		from, err := mappedfile.ParseFileName(name)
		require.NoError(t, err)
		if from < firstBad {
			require.Equal(t, b, after[name], "%s is untouched", name)
			continue
		}
		var aside []byte
		for n, ab := range after {
			if strings.HasPrefix(n, name+".damaged-") {
				aside = ab
			}
		}
		require.Equal(t, b, aside, "%s is moved aside whole", name)
	}
	head := after[mappedfile.FileName(firstBad)]
	require.Equal(t, before[mappedfile.FileName(firstBad)][:bad.WroteOffset-firstBad], head[:bad.WroteOffset-firstBad],
		"the intact records of the damaged file are kept")

	l2 := openTestLog(t, dir, Options{})
	require.Equal(t, res.WroteOffset+int64(res.WroteBytes), l2.MaxOffset(), "the repaired log opens as it is")
}

// A write cut short by a crash leaves zeros; pages written after it may
// reach the disk anyway, so valid records can follow a torn one. Without
// knowing that they were flushed, that is a torn tail, cut as before.
func TestLog_Reopen_CutsTornWriteWithLaterPagesWritten(t *testing.T) {
	dir := t.TempDir()
	results := appendFiles(t, dir, 10)
	path := filepath.Join(dir, mappedfile.FileName(0))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	torn := results[7]
	lo := (torn.WroteOffset/sectorSize + 1) * sectorSize // a sector of record 7 never written
	clear(raw[lo : lo+sectorSize])
	require.NoError(t, os.WriteFile(path, raw, 0o644))

	l := openTestLog(t, dir, Options{})
	require.Equal(t, torn.WroteOffset, l.MaxOffset(), "cut at the torn record")
	require.Equal(t, int64(7), l.QueueOffset("TopicT", 0))
	_, _, err = l.ReadRecord(results[8].WroteOffset)
	require.ErrorIs(t, err, ErrNotFound, "nothing past the cut is served")
}

// What the caller knows was durable turns the same torn-looking damage
// into corruption: a clean close, or a later record older than the
// checkpoint's flush time.
func TestLog_Recover_DurableRecordsAfterDamageAreCorruption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		durable func(results []AppendResult) Durable
		corrupt bool
	}{
		{"nothing known", func([]AppendResult) Durable { return Durable{} }, false},
		{"closed cleanly", func([]AppendResult) Durable { return Durable{All: true} }, true},
		{"later record flushed", func(r []AppendResult) Durable { return Durable{Before: r[9].StoreTimestamp + 1} }, true},
		{"later records not flushed", func(r []AppendResult) Durable { return Durable{Before: r[6].StoreTimestamp} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			results := appendFiles(t, dir, 10)
			path := filepath.Join(dir, mappedfile.FileName(0))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			torn := results[7]
			lo := (torn.WroteOffset/sectorSize + 1) * sectorSize
			clear(raw[lo : lo+sectorSize])
			require.NoError(t, os.WriteFile(path, raw, 0o644))

			l, err := Open(dir, Options{FileSize: testFileSize, StoreHost: testStoreHost, ExternalRecovery: true})
			require.NoError(t, err)
			defer l.Close()
			end, err := l.Recover(0, tc.durable(results), nil)
			if tc.corrupt {
				require.ErrorIs(t, err, ErrCorrupt)
				require.Equal(t, torn.WroteOffset, end)
				return
			}
			require.NoError(t, err)
			require.Equal(t, torn.WroteOffset, end)
		})
	}
}

func TestFindRecord_SkipsLookalikes(t *testing.T) {
	m := newMessage("TopicF", 0, []byte("body"))
	size, err := message.EncodedSize(m)
	require.NoError(t, err)
	b := make([]byte, 4096)
	m.PhysicalOffset = 1000 + 300
	message.EncodeCRC(b[300:], m, size)
	copy(b[100:], []byte{0, 0, 0, 0x80, 0xDA, 0xA3, 0x20, 0xA7}) // a magic that is no record
	at, _, ok := findRecord(b, 0, 1000)
	require.True(t, ok)
	require.Equal(t, 300, at)
	_, _, ok = findRecord(b, 301, 1000)
	require.False(t, ok)
	m.PhysicalOffset = 5
	message.EncodeCRC(b[300:], m, size) // says it is elsewhere
	_, _, ok = findRecord(b, 0, 1000)
	require.False(t, ok)
}

// A bad last record is a torn tail unless it was flushed: the record
// before it older than the last flush says so.
func TestLog_Recover_FlushedLastRecordIsCorruption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		durable func(results []AppendResult) Durable
		corrupt bool
	}{
		{"nothing known", func([]AppendResult) Durable { return Durable{} }, false},
		{"flushed up to the record before", func(r []AppendResult) Durable { return Durable{Before: r[8].StoreTimestamp} }, false},
		{"flushed past the record before", func(r []AppendResult) Durable { return Durable{Before: r[8].StoreTimestamp + 1} }, true},
		{"closed cleanly", func([]AppendResult) Durable { return Durable{All: true} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			results := appendFiles(t, dir, 10)
			last := results[9]
			flipAt(t, dir, last.WroteOffset+int64(last.WroteBytes)-100)
			l, err := Open(dir, Options{FileSize: testFileSize, StoreHost: testStoreHost, ExternalRecovery: true})
			require.NoError(t, err)
			defer l.Close()
			end, err := l.Recover(0, tc.durable(results), nil)
			require.Equal(t, last.WroteOffset, end)
			if tc.corrupt {
				require.ErrorIs(t, err, ErrCorrupt)
				var ce *CorruptionError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, int64(-1), ce.Next)
				return
			}
			require.NoError(t, err)
			require.Equal(t, results[8].StoreTimestamp, l.LastStoreTimestamp(), "the store time of the last record kept")
		})
	}
}

// A lost sector whose last bytes begin a record (TOTALSIZE spans the
// sector's end, so only its low bytes are left) is a torn write, not
// corruption, even with later sectors and records written.
func TestLog_Reopen_CutsTornWriteOfASectorHoldingARecordsFirstBytes(t *testing.T) {
	// Three bytes: the records are under 64 KiB, so losing only TOTALSIZE's
	// two high bytes would change nothing.
	for _, headLen := range []int{3} {
		t.Run(fmt.Sprintf("head=%d", headLen), func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, dir, Options{})
			base, err := message.EncodedSize(newMessage("TopicT", 0, nil))
			require.NoError(t, err)
			// The first record ends headLen bytes before the end of sector 1.
			first, err := l.Append(newMessage("TopicT", 0, make([]byte, 2*sectorSize-headLen-base)))
			require.NoError(t, err)
			var results []AppendResult
			for i := range 4 {
				res, err := l.Append(newMessage("TopicT", 0, bytes.Repeat([]byte{'a' + byte(i)}, 700)))
				require.NoError(t, err)
				results = append(results, res)
			}
			require.NoError(t, l.Close())
			torn := results[0]
			require.Equal(t, first.WroteOffset+int64(2*sectorSize-headLen), torn.WroteOffset)

			path := filepath.Join(dir, mappedfile.FileName(0))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			clear(raw[torn.WroteOffset : 2*sectorSize]) // the unflushed end of sector 1 is lost
			require.NoError(t, os.WriteFile(path, raw, 0o644))

			l2, err := Open(dir, Options{FileSize: testFileSize, StoreHost: testStoreHost, ExternalRecovery: true})
			require.NoError(t, err)
			defer l2.Close()
			end, err := l2.Recover(0, Durable{}, nil)
			require.NoError(t, err, "a torn write, not corruption")
			require.Equal(t, torn.WroteOffset, end, "cut at the torn record")
		})
	}
}
