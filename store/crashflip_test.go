package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// logRecord is a record found by walking a store's CommitLog files on disk.
type logRecord struct {
	offset      int64
	size        int
	bodyAt      int // position of the body in the record
	bodyLen     int
	topic       string
	queueID     int32
	queueOffset int64
}

// walkCommitLog parses the CommitLog files of the store in dir from the
// first, as recovery does but without the store, up to the first record
// that fails its checks or the first zeros.
func walkCommitLog(t *testing.T, dir string, fileSize int) []logRecord {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "commitlog"))
	if errors.Is(err, os.ErrNotExist) {
		return nil // killed before it made any
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if _, err := mappedfile.ParseFileName(e.Name()); err == nil {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var out []logRecord
	for _, name := range names {
		from, _ := mappedfile.ParseFileName(name)
		b, err := os.ReadFile(filepath.Join(dir, "commitlog", name))
		require.NoError(t, err)
		require.Len(t, b, fileSize)
		for pos := 0; ; {
			if fileSize-pos < 8 {
				break // padding: the next file
			}
			size, magic, _ := message.PeekHeader(b[pos:])
			if magic == message.MagicBlank {
				break
			}
			r, err := message.Parse(b[pos:])
			if size == 0 && magic == 0 || err != nil || r.CheckCRC() != nil || r.CheckWhole() != nil || r.PhysicalOffset() != from+int64(pos) {
				return out
			}
			topicLen := 1
			if r.Magic() == message.MagicV2 {
				topicLen = 2
			}
			bodyAt := len(r) - len(r.Properties()) - 2 - len(r.Topic()) - topicLen - len(r.Body())
			out = append(out, logRecord{from + int64(pos), len(r), bodyAt, len(r.Body()), string(r.Topic()), r.QueueID(), r.QueueOffset()})
			pos += len(r)
		}
	}
	return out
}

// copyStore copies the store in dir to a new folder and returns it.
func copyStore(t *testing.T, dir string) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.CopyFS(cp, os.DirFS(dir)))
	return cp
}

// checkBitFlip flips one bit of a record in the middle of a copy of the
// (crashed) store in dir: a record of its last file with valid records
// after it, in its body, length, magic code or physical offset.
// Opening the copy must fail with commitlog.ErrCorrupt naming the record
// and change none of its files; opening it with RepairCommitLog must
// serve exactly the acknowledged messages stored before the flip, with the
// damaged files moved aside whole. It reports whether it found a record
// to flip.
func checkBitFlip(t *testing.T, dir string, opts Options, acks []acked, rng *rand.Rand) bool {
	t.Helper()
	size := int64(opts.CommitLogFileSize)
	recs := walkCommitLog(t, dir, opts.CommitLogFileSize)
	if len(recs) < 2 {
		return false
	}
	// The last file is always checked by recovery; older ones only from
	// where the checkpoint says (and from where dispatch starts again).
	lastFile := recs[len(recs)-1].offset / size
	first := len(recs) - 1
	for first > 0 && recs[first-1].offset/size == lastFile {
		first--
	}
	if first == len(recs)-1 {
		return false
	}
	bad := recs[first+rng.IntN(len(recs)-1-first)]
	var at int64
	switch field := rng.IntN(8); {
	case field < 5 && bad.bodyLen > 0:
		at = bad.offset + int64(bad.bodyAt+rng.IntN(bad.bodyLen))
	case field == 5:
		at = bad.offset + int64(rng.IntN(4)) // TOTALSIZE
	case field == 6:
		at = bad.offset + 4 + int64(rng.IntN(4)) // MAGICCODE
	default:
		at = bad.offset + 28 + int64(rng.IntN(8)) // PHYSICALOFFSET
	}

	cp := copyStore(t, dir)
	path := filepath.Join(cp, "commitlog", mappedfile.FileName(at-at%size))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	raw[at%size] ^= 1 << rng.IntN(8)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	before := storeFiles(t, cp)

	_, err = Open(cp, opts)
	require.ErrorIs(t, err, commitlog.ErrCorrupt, "a bit flip at %d in the record at %d", at, bad.offset)
	var ce *commitlog.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, bad.offset, ce.Offset)
	require.Equal(t, path, ce.File)
	// The CommitLog and index are as they were. (Opening the ConsumeQueues,
	// before the CommitLog is checked, trims their torn units: they are
	// rebuilt from the CommitLog.)
	after := storeFiles(t, cp)
	for name, b := range before {
		if !strings.HasPrefix(name, "/consumequeue/") && !strings.HasSuffix(name, ".tmp") { // index temp files are cleared
			require.True(t, bytes.Equal(b, after[name]), "a refused open changes nothing: %s", name)
		}
	}

	opts.RepairCommitLog = true
	s, err := Open(cp, opts)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, bad.offset, s.CommitLog().MaxOffset())
	type qkey struct {
		topic string
		qid   int32
		qoff  int64
	}
	where := map[qkey]int64{}
	for _, r := range recs {
		where[qkey{r.topic, r.queueID, r.queueOffset}] = r.offset
	}
	// Every acknowledged message before the flip is served: all of those
	// in the last file, and up to 300 older ones picked at random.
	var kept, older []acked
	for _, a := range acks {
		m := crashMessage(a.round, a.i)
		off, ok := where[qkey{m.Topic, m.QueueID, a.qoff}]
		require.True(t, ok, "acknowledged %s-%d is in the log", a.round, a.i)
		switch {
		case off >= bad.offset:
		case off/size == lastFile:
			kept = append(kept, a)
		default:
			older = append(older, a)
		}
	}
	for range min(300, len(older)) {
		kept = append(kept, older[rng.IntN(len(older))])
	}
	verifyAcked(t, s, kept)
	entries, err := os.ReadDir(filepath.Join(cp, "commitlog"))
	require.NoError(t, err)
	moved := 0
	for _, e := range entries {
		if i := strings.Index(e.Name(), ".damaged-"); i > 0 {
			b, err := os.ReadFile(filepath.Join(cp, "commitlog", e.Name()))
			require.NoError(t, err)
			want := before["/commitlog/"+e.Name()[:i]]
			require.True(t, bytes.Equal(want, b), "%s is moved aside whole: %d bytes, want %d, first difference at %d (bad record at %d, flip at %d)",
				e.Name(), len(b), len(want), firstDiff(want, b), bad.offset, at)
			moved++
		}
	}
	damaged := 0
	for name := range before {
		if from, err := mappedfile.ParseFileName(strings.TrimPrefix(name, "/commitlog/")); err == nil && from+size > bad.offset {
			damaged++
		}
	}
	require.Equal(t, damaged, moved, "the damaged file and every later one are moved aside")
	require.Positive(t, moved)
	return true
}

// firstDiff is the first position where a and b differ, -1 if none.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
