package store

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/mappedfile"
)

// fillStore puts n messages with keys to one queue, closes the store, and
// returns their put results.
func fillStore(t *testing.T, dir string, n int) []PutResult {
	t.Helper()
	s, err := Open(dir, smallOptions())
	require.NoError(t, err)
	var res []PutResult
	for i := range n {
		res = append(res, mustPut(t, s, msg("TopicRec", 0, fmt.Sprintf("body-%d-%s", i, make([]byte, 200)), "", fmt.Sprint("key", i))))
	}
	require.NoError(t, s.Close())
	return res
}

// checkPrefix checks that exactly the first n messages are served.
func checkPrefix(t *testing.T, s *MessageStore, n int) {
	t.Helper()
	require.Equal(t, int64(n), s.GetMaxOffsetInQueue("TopicRec", 0))
	for off := int64(0); off < int64(n); {
		r := s.GetMessage("g", "TopicRec", 0, off, 16, nil)
		require.Equal(t, Found, r.Status)
		for _, b := range bodies(t, r) {
			require.Equal(t, fmt.Sprintf("body-%d-%s", off, make([]byte, 200)), b)
			off++
		}
	}
	r := s.GetMessage("g", "TopicRec", 0, int64(n), 16, nil)
	require.Equal(t, OffsetOverflowOne, r.Status, "nothing past the cut is served")
	r.Release()
	for i := range n {
		q, err := s.QueryMessage("TopicRec", fmt.Sprint("key", i), 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "key%d", i)
		q.Release()
	}
	q, err := s.QueryMessage("TopicRec", fmt.Sprint("key", n), 4, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, q.Messages, "the first cut message is not found by key")
	q.Release()
	// Puts continue at the cut.
	res := mustPut(t, s, msg("TopicRec", 0, "after", "", ""))
	require.Equal(t, int64(n), res.QueueOffset)
}

func lastCommitLogFile(t *testing.T, dir string, at int64) string {
	t.Helper()
	return filepath.Join(dir, "commitlog", mappedfile.FileName(at-at%int64(smallOptions().CommitLogFileSize)))
}

func TestStore_Recovery_DamagedCommitLog(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		for _, tc := range []struct {
			name   string
			damage func(t *testing.T, path string, rec PutResult)
		}{
			{"torn tail zeroed", func(t *testing.T, path string, rec PutResult) {
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				require.NoError(t, err)
				defer f.Close()
				at := rec.WroteOffset%int64(smallOptions().CommitLogFileSize) + int64(rec.WroteBytes)/2
				_, err = f.WriteAt(make([]byte, smallOptions().CommitLogFileSize-int(at)), at)
				require.NoError(t, err)
			}},
			{"file cut short mid-record", func(t *testing.T, path string, rec PutResult) {
				at := rec.WroteOffset%int64(smallOptions().CommitLogFileSize) + 30
				require.NoError(t, os.Truncate(path, at))
			}},
		} {
			t.Run(fmt.Sprintf("%s/crashed=%v", tc.name, crashed), func(t *testing.T) {
				dir := t.TempDir()
				res := fillStore(t, dir, 120)
				const cut = 110
				tc.damage(t, lastCommitLogFile(t, dir, res[cut].WroteOffset), res[cut])
				if !crashed {
					// After a clean shutdown everything was flushed: a bad
					// last record is damage, not a torn tail.
					_, err := Open(dir, smallOptions())
					require.ErrorIs(t, err, commitlog.ErrCorrupt)
					opts := smallOptions()
					opts.RepairCommitLog = true
					checkPrefix(t, openTestStore(t, dir, opts), cut)
					return
				}
				// A crash before the checkpoint recorded a flush: a torn tail.
				require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
				zeroCheckpoint(t, dir)
				s := openTestStore(t, dir, smallOptions())
				checkPrefix(t, s, cut)
			})
		}
	}
}

// zeroCheckpoint clears the checkpoint's timestamps, as in a store that
// crashed before it ever wrote them.
func zeroCheckpoint(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checkpoint"), make([]byte, 4096), 0o644))
}

// storeFiles maps the path (under dir) of every file of the CommitLog,
// ConsumeQueues and index to its bytes.
func storeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, sub := range []string{"commitlog", "consumequeue", "index"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			out[strings.TrimPrefix(path, dir)] = b
			return err
		})
		require.NoError(t, err)
	}
	return out
}

// flipBit flips one bit of the store's CommitLog at offset off.
func flipBit(t *testing.T, dir string, off int64, fileSize int) {
	t.Helper()
	path := filepath.Join(dir, "commitlog", mappedfile.FileName(off-off%int64(fileSize)))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off%int64(fileSize))
	require.NoError(t, err)
	b[0] ^= 0x10
	_, err = f.WriteAt(b, off%int64(fileSize))
	require.NoError(t, err)
}

// A bit flip in the middle of the CommitLog, with valid records after it in
// the same file (and the next), is corruption: Open refuses, names the file
// and offset, and changes nothing; with RepairCommitLog it moves the
// damaged files aside and opens with the records before the flip. (After a
// clean shutdown recovery checks only the last file, where the
// ConsumeQueues end, as RocketMQ 5.3.2+ does.)
func TestStore_Recovery_CorruptRecordInTheMiddle(t *testing.T) {
	for _, tc := range []struct {
		crashed bool
		bad     int
	}{{false, 250}, {true, 250}, {true, 110}} {
		t.Run(fmt.Sprintf("crashed=%v/record=%d", tc.crashed, tc.bad), func(t *testing.T) {
			dir := t.TempDir()
			res := fillStore(t, dir, 300)
			bad, crashed := tc.bad, tc.crashed
			size := smallOptions().CommitLogFileSize
			if bad == 110 {
				require.Greater(t, res[299].WroteOffset/int64(size), res[bad].WroteOffset/int64(size), "valid records in later files")
			}
			flipBit(t, dir, res[bad].WroteOffset+int64(res[bad].WroteBytes)-60, size)
			if crashed {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
			}
			before := storeFiles(t, dir)

			_, err := Open(dir, smallOptions())
			require.ErrorIs(t, err, commitlog.ErrCorrupt)
			var ce *commitlog.CorruptionError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, res[bad].WroteOffset, ce.Offset)
			require.Equal(t, lastCommitLogFile(t, dir, res[bad].WroteOffset), ce.File)
			require.Equal(t, before, storeFiles(t, dir), "nothing was deleted or changed")

			opts := smallOptions()
			opts.RepairCommitLog = true
			s := openTestStore(t, dir, opts)
			checkPrefix(t, s, bad)
			var aside []string
			entries, err := os.ReadDir(filepath.Join(dir, "commitlog"))
			require.NoError(t, err)
			for _, e := range entries {
				if strings.Contains(e.Name(), ".damaged-") {
					aside = append(aside, e.Name())
					name := e.Name()[:strings.Index(e.Name(), ".damaged-")]
					b, err := os.ReadFile(filepath.Join(dir, "commitlog", e.Name()))
					require.NoError(t, err)
					require.Equal(t, before["/commitlog/"+name], b, "%s is moved aside whole", name)
				}
			}
			require.Len(t, aside, int(res[299].WroteOffset/int64(size)-res[bad].WroteOffset/int64(size))+1)
		})
	}
}

// A crash right after a roll-over: the old file ends with its END_OF_FILE
// padding and the new file holds nothing yet. Dispatch must count the
// padding as dispatched, or recovery stops short of the end of the log.
func TestStore_Recovery_EndsRightAfterPadding(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("crashed=%v", crashed), func(t *testing.T) {
			dir := t.TempDir()
			res := fillStore(t, dir, 300)
			size := int64(smallOptions().CommitLogFileSize)
			cut := -1
			for i := 1; i < len(res); i++ {
				if res[i].WroteOffset%size == 0 {
					cut = i // the first record of a new file
					break
				}
			}
			require.Positive(t, cut, "the messages fill more than one file")
			path := lastCommitLogFile(t, dir, res[cut].WroteOffset)
			require.NoError(t, os.WriteFile(path, make([]byte, size), 0o644))
			for _, r := range res[cut+1:] { // and the files after it
				if p := lastCommitLogFile(t, dir, r.WroteOffset); p != path {
					require.NoError(t, os.WriteFile(p, make([]byte, size), 0o644))
				}
			}
			if crashed {
				// A crash before the checkpoint recorded the flush of the
				// lost file (else losing it is damage, refused).
				require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
				zeroCheckpoint(t, dir)
			}
			s := openTestStore(t, dir, smallOptions())
			checkPrefix(t, s, cut)
			require.True(t, s.WaitDispatched(5*time.Second))
		})
	}
}

func TestStore_Recovery_RebuildsQueuesAndIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir, stale string)
	}{
		{"consume queues deleted", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "consumequeue")))
		}},
		{"index deleted", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "index")))
		}},
		{"both deleted after a crash", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "consumequeue")))
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "index")))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
		}},
		{"stale queues and index", func(t *testing.T, dir, stale string) {
			for _, sub := range []string{"consumequeue", "index"} {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, sub)))
				require.NoError(t, os.Rename(filepath.Join(stale, sub), filepath.Join(dir, sub)))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, stale := t.TempDir(), t.TempDir()
			fillStore(t, dir, 60)
			for _, sub := range []string{"consumequeue", "index"} { // a copy from when 60 were in
				require.NoError(t, os.CopyFS(filepath.Join(stale, sub), os.DirFS(filepath.Join(dir, sub))))
			}
			s := openTestStore(t, dir, smallOptions())
			for i := 60; i < 130; i++ {
				mustPut(t, s, msg("TopicRec", 0, fmt.Sprintf("body-%d-%s", i, make([]byte, 200)), "", fmt.Sprint("key", i)))
			}
			require.NoError(t, s.Close())
			tc.damage(t, dir, stale)
			s2 := openTestStore(t, dir, smallOptions())
			checkPrefix(t, s2, 130)
		})
	}
}

// editUnit changes the bytes of unit index of a closed store's queue.
func editUnit(t *testing.T, dir, topic string, queueID int32, index int64, edit func(u []byte)) {
	t.Helper()
	per := int64(smallOptions().ConsumeQueueFileUnits)
	path := filepath.Join(dir, "consumequeue", topic, fmt.Sprint(queueID), mappedfile.FileName(index/per*per*20))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pos := index % per * 20
	edit(b[pos : pos+20])
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// A ConsumeQueue unit damaged in the middle of a queue (units after it)
// is not served and the queue is not cut there for good: the units from
// it on are built again from the CommitLog, even when the open that found
// the damage fails.
func TestStore_Recovery_RebuildsDamagedConsumeQueue(t *testing.T) {
	for _, refused := range []bool{false, true} {
		t.Run(fmt.Sprintf("first open refused=%v", refused), func(t *testing.T) {
			dir := t.TempDir()
			s := openTestStore(t, dir, smallOptions())
			var res []PutResult // 13 files of 10 units, each message followed by one of another queue
			for i := range 130 {
				res = append(res, mustPut(t, s, msg("TopicRec", 0, fmt.Sprintf("body-%d-%s", i, make([]byte, 200)), "", fmt.Sprint("key", i))))
				mustPut(t, s, msg("TopicOther", 1, "another queue", "", ""))
			}
			require.NoError(t, s.Close())
			editUnit(t, dir, "TopicRec", 0, 115, func(u []byte) { clear(u[4:8]) }) // its offset goes back
			if refused {
				flipBit(t, dir, res[125].WroteOffset+int64(res[125].WroteBytes)-60, smallOptions().CommitLogFileSize)
				_, err := Open(dir, smallOptions())
				require.ErrorIs(t, err, commitlog.ErrCorrupt)
				opts := smallOptions()
				opts.RepairCommitLog = true
				s = openTestStore(t, dir, opts)
				checkPrefix(t, s, 125)
				return
			}
			s = openTestStore(t, dir, smallOptions())
			// one more than the 130 is the put after the cut, by checkPrefix
			checkPrefix(t, s, 130)
		})
	}
}
