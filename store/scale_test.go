package store

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scaleTopic names the topic of queue i of a many-queue test: 4 queues a topic.
func scaleTopic(i int) (string, int32) { return fmt.Sprintf("ScaleTopic%05d", i/4), int32(i % 4) }

// TestStore_ManyQueues opens a store with many queues (2,000; 100,000 with
// -long), puts one message to each, closes it, opens it again and checks
// what a queue costs: the disk allocated per ConsumeQueue, the fds and
// mappings the process holds (under the mapping budget), the time to
// reopen, and that every message reads back.
func TestStore_ManyQueues(t *testing.T) {
	queues := 2000
	if *long {
		queues = 100_000
	}
	dir := t.TempDir()
	opts := Options{CommitLogFileSize: 64 << 20, DisableIndex: true, DisableTimerWheel: true}
	fds0, maps0 := countFDs(t), countMaps(t)

	s, err := Open(dir, opts)
	require.NoError(t, err)
	start := time.Now()
	for i := range queues {
		topic, q := scaleTopic(i)
		mustPut(t, s, msg(topic, q, fmt.Sprint("body-", i), "", ""))
	}
	putTime := time.Since(start)
	waitDispatched(t, s)
	fds1, maps1 := countFDs(t)-fds0, countMaps(t)-maps0
	require.NoError(t, s.Close())

	blocks, files := allocatedBytes(t, filepath.Join(dir, "consumequeue"))
	perQueue := blocks / int64(queues)

	start = time.Now()
	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	reopen := time.Since(start)
	require.Equal(t, queues, s.cqs.Lazy(), "after a clean shutdown no queue opens before it is used")
	fds2, maps2 := countFDs(t)-fds0, countMaps(t)-maps0
	for i := range queues {
		topic, q := scaleTopic(i)
		r := s.GetMessage("g", topic, q, 0, 1, nil)
		got := bodies(t, r)
		require.Equal(t, []string{fmt.Sprint("body-", i)}, got, "queue %s/%d", topic, q)
	}
	fds3, maps3 := countFDs(t)-fds0, countMaps(t)-maps0
	t.Logf("%d queues (%d files): put %v (%.1f µs/queue); ConsumeQueue disk %d B/queue; reopen %v (%.1f µs/queue); "+
		"fds/maps after puts %d/%d, after reopen %d/%d, after reading all %d/%d",
		queues, files, putTime, float64(putTime.Microseconds())/float64(queues), perQueue,
		reopen, float64(reopen.Microseconds())/float64(queues), fds1, maps1, fds2, maps2, fds3, maps3)
	require.LessOrEqual(t, perQueue, int64(8<<10), "disk allocated per queue")
	budget := s.opts.MaxMappedConsumeQueueFiles
	for _, n := range []int{fds1, fds2, fds3} {
		require.Less(t, n, 64, "fds held by the store")
	}
	for _, n := range []int{maps1, maps2, maps3} {
		require.LessOrEqual(t, n, budget+64, "mappings held by the store (budget %d)", budget)
	}
}

// allocatedBytes sums the disk allocated (stat blocks) to the files under dir.
func allocatedBytes(t *testing.T, dir string) (bytes int64, files int) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		bytes += info.Sys().(*syscall.Stat_t).Blocks * 512
		files++
		return nil
	}))
	return bytes, files
}

// countFDs is how many fds the process has open.
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// countMaps is how many mappings the process has (lines of /proc/self/maps).
func countMaps(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}
