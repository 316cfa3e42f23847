package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
			{"bit flip in a body", func(t *testing.T, path string, rec PutResult) {
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				require.NoError(t, err)
				defer f.Close()
				at := rec.WroteOffset%int64(smallOptions().CommitLogFileSize) + int64(rec.WroteBytes) - 60
				b := make([]byte, 1)
				_, err = f.ReadAt(b, at)
				require.NoError(t, err)
				b[0] ^= 0x10
				_, err = f.WriteAt(b, at)
				require.NoError(t, err)
			}},
		} {
			t.Run(fmt.Sprintf("%s/crashed=%v", tc.name, crashed), func(t *testing.T) {
				dir := t.TempDir()
				res := fillStore(t, dir, 120)
				const cut = 110
				tc.damage(t, lastCommitLogFile(t, dir, res[cut].WroteOffset), res[cut])
				if crashed {
					require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
				}
				s := openTestStore(t, dir, smallOptions())
				checkPrefix(t, s, cut)
			})
		}
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
				require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
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
