package flush

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/message"
)

func TestGroupCommit_WritersShareFlushes(t *testing.T) {
	l, err := commitlog.Open(t.TempDir(), commitlog.Options{FileSize: 1 << 20})
	require.NoError(t, err)
	defer l.Close()
	g := NewGroupCommit(l.Flush, 0, nil)
	defer g.Close()

	const writers, each = 32, 20
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				m := &message.Message{Topic: "T", Body: make([]byte, 100)}
				res, err := l.Append(m)
				if err != nil {
					t.Error(err)
					return
				}
				end := res.WroteOffset + int64(res.WroteBytes)
				if err := g.Wait(end); err != nil {
					t.Error(err)
					return
				}
				if l.FlushedOffset() < end {
					t.Errorf("Wait returned with flushed %d < %d", l.FlushedOffset(), end)
				}
			}
		})
	}
	wg.Wait()
	require.Less(t, g.Syncs(), int64(writers*each), "flushes are shared")
	t.Logf("%d puts, %d syncs", writers*each, g.Syncs())
}

func TestGroupCommit_TimeoutAndError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var fail atomic.Bool
		stuck := func(int) (int64, error) { // a disk that hangs, then fails
			<-release
			if fail.Load() {
				return 0, errors.New("EIO")
			}
			return 100, nil
		}
		g := NewGroupCommit(stuck, 50*time.Millisecond, nil)
		start := time.Now()
		require.ErrorIs(t, g.Wait(10), ErrTimeout)
		require.Equal(t, 50*time.Millisecond, time.Since(start))
		fail.Store(true)
		close(release)
		err := g.Wait(10)
		require.EqualError(t, err, "EIO")
		g.Close()
		require.ErrorIs(t, g.Wait(10), ErrClosed)
	})
}

func TestPeriodic_LeastPagesAndThorough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var pages []int
		p := StartPeriodic(func(n int) error {
			mu.Lock()
			pages = append(pages, n)
			mu.Unlock()
			return nil
		}, PeriodicOptions{Interval: 500 * time.Millisecond, Thorough: 2 * time.Second, LeastPages: 4})
		time.Sleep(4*time.Second + time.Millisecond)
		synctest.Wait()
		mu.Lock()
		require.Equal(t, []int{4, 4, 4, 0, 4, 4, 4, 0}, pages, "4 pages every 500 ms, any amount every 2 s")
		mu.Unlock()
		p.Wake()
		synctest.Wait()
		require.NoError(t, p.Close())
		mu.Lock()
		require.Equal(t, []int{4, 4, 4, 0, 4, 4, 4, 0, 4, 0}, pages, "a wake runs at once; Close runs thoroughly")
		mu.Unlock()
		require.NoError(t, p.Close())
	})
}

// TestGroupCommit_GathersTheWritersItAnswered: writers that come back one
// by one after a flush share the next one, instead of the first of them
// starting a flush that leaves the others to wait for one more; gather
// waits for them at most 1 ms (half a flush), and a lone writer not at all.
//
// It runs on the fake clock of a synctest bubble. How soon the writers
// come back is the scheduler's on a real clock: on a loaded machine they
// came back after the 1 ms and flushes covered 8 writers of 16, which is
// what gather promises then. The figure under real scheduling is
// store's BenchmarkPutMessageSyncFlush (msgs/fsync).
func TestGroupCommit_GathersTheWritersItAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var written atomic.Int64
		var durable int64
		var covered []int64       // records made durable by each flush
		var began []time.Duration // when each flush began
		const fsync = 3 * time.Millisecond
		flush := func(int) (int64, error) { // called by the service alone
			began = append(began, time.Since(start))
			end := written.Load()
			time.Sleep(fsync)
			covered = append(covered, end-durable)
			durable = end
			return end, nil
		}
		g := NewGroupCommit(flush, 0, nil)
		defer g.Close()
		put := func() {
			if err := g.Wait(written.Add(1)); err != nil {
				t.Error(err)
			}
		}

		// A lone writer is flushed at once; 16 writers come during its
		// flush and share the next.
		go put()
		synctest.Wait()
		const writers, step = 16, 60 * time.Microsecond
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				put()
				// Back one by one, all within the gather's 1 ms.
				time.Sleep(time.Duration(i) * step)
				put()
				// Once more, the last one too late for the gather.
				if i == writers-1 {
					time.Sleep(5 * time.Millisecond)
				} else {
					time.Sleep(time.Duration(i) * step)
				}
				put()
			})
		}
		wg.Wait()
		ms := time.Millisecond
		require.Equal(t, []int64{1, 16, 16, 15, 1}, covered, "records per flush")
		require.Equal(t, []time.Duration{
			0,                             // the lone writer
			fsync,                         // the 16 that came meanwhile
			2*fsync + 15*step,             // all 16 back, the last after 900 µs
			3*fsync + 15*step + ms,        // 15 back, the gather's 1 ms over
			3*fsync + 15*step + 5*ms + ms, // the late one, after 1 ms more
		}, began, "when each flush began")
	})
}

// closeConcurrently calls close from n goroutines released at once.
func closeConcurrently(n int, closeFn func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			closeFn()
		})
	}
	close(start)
	wg.Wait()
}

// Two Closes at once are safe: one stops the service, the other returns
// once it has stopped (the check-then-close of a channel panicked).
func TestGroupCommit_ConcurrentClose(t *testing.T) {
	for range 3000 {
		g := NewGroupCommit(func(int) (int64, error) { return 0, nil }, 0, nil)
		closeConcurrently(8, g.Close)
		require.ErrorIs(t, g.Wait(1), ErrClosed)
	}
}

func TestPeriodic_ConcurrentClose(t *testing.T) {
	for range 3000 {
		var runs atomic.Int32
		p := StartPeriodic(func(int) error { runs.Add(1); return nil }, PeriodicOptions{Interval: time.Hour, Thorough: time.Hour})
		closeConcurrently(8, func() { _ = p.Close() })
		require.Equal(t, int32(1), runs.Load(), "one last run, by the first Close")
	}
}
