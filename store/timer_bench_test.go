package store

import (
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/timer"
)

func benchTimerStore(b *testing.B, clock *fakeClock) *MessageStore {
	b.Helper()
	opts := timerOptions(clock)
	opts.CommitLogFileSize = 256 << 20
	opts.TimerLogFileSize = 0 // 100 MiB, as RocketMQ
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// waitTimer waits until cond holds of the timer's status.
func waitTimer(b *testing.B, s *MessageStore, cond func(Timer) bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if st, _ := s.TimerStatus(); cond(st) {
			return
		}
		if time.Now().After(deadline) {
			st, _ := s.TimerStatus()
			b.Fatalf("the timer did not get there: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

// cpuTime is the process's user+system CPU time so far: on a shared
// machine a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkTimer_Schedule puts b.N timers spread over an hour (run it with
// -benchtime=1000000x) and reports what the pending timers cost the Go
// heap and how fast they are put and scheduled into the wheel.
func BenchmarkTimer_Schedule(b *testing.B) {
	clock := newFakeClock()
	s := benchTimerStore(b, clock)
	before := heapInuse()
	msgs := make([]*message.Message, b.N)
	for i := range msgs {
		at := clock.at(time.Second + time.Duration(i)*time.Hour/time.Duration(b.N))
		msgs[i] = timerMessage("T", int32(i%4), strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10))
	}
	b.SetBytes(timer.UnitSize)
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for i := range b.N {
		if _, err := s.PutMessage(msgs[i]); err != nil {
			b.Fatal(err)
		}
		msgs[i] = nil
	}
	waitTimer(b, s, func(st Timer) bool { return st.Enqueued == int64(b.N) })
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-us/timer")
	msgs = nil
	after := heapInuse()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "timers/s")
	b.ReportMetric((float64(after)-float64(before))/float64(b.N), "heapB/timer")
	if st, _ := s.TimerStatus(); st.Delivered != 0 {
		b.Fatalf("delivered %d timers early", st.Delivered)
	}
}

// BenchmarkTimer_DeliverBurst delivers b.N timers due in the same second
// (run it with -benchtime=100000x) and reports how long after their time
// the last one is in its queue.
func BenchmarkTimer_DeliverBurst(b *testing.B) {
	clock := newFakeClock()
	s := benchTimerStore(b, clock)
	due := clock.at(2 * time.Second)
	for i := range b.N {
		m := timerMessage("T", int32(i%4), strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10))
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	waitTimer(b, s, func(st Timer) bool { return st.Enqueued == int64(b.N) })
	b.SetBytes(timer.UnitSize)
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	clock.add(2 * time.Second)
	waitTimer(b, s, func(st Timer) bool { return st.Delivered == int64(b.N) })
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-us/timer")
	b.ReportMetric(elapsed.Seconds(), "s-to-deliver-all")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "timers/s")
}

// BenchmarkTimer_Enqueue measures the timer's own part of scheduling: b.N
// parked timer messages (spread over an hour) read from the timer queue
// and linked into the wheel, with no put in the timing.
func BenchmarkTimer_Enqueue(b *testing.B) {
	clock := newFakeClock()
	opts := timerOptions(clock)
	opts.CommitLogFileSize = 256 << 20
	opts.TimerLogFileSize = 0
	opts.DisableTimerWheel = true // no timer goroutine: this benchmark drives one by hand
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.opts.DisableTimerWheel = false
	for i := range b.N {
		at := clock.at(time.Second + time.Duration(i)*time.Hour/time.Duration(b.N))
		m := timerMessage("T", int32(i%4), strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10))
		if err := s.scheduleTimer(m); err != nil {
			b.Fatal(err)
		}
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	t, err := openTimer(s)
	if err != nil {
		b.Fatal(err)
	}
	defer t.close()
	b.SetBytes(timer.UnitSize)
	b.ResetTimer()
	start := time.Now()
	if !t.enqueue() || t.stats.Enqueued.Load() != int64(b.N) {
		b.Fatalf("enqueued %d of %d", t.stats.Enqueued.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "timers/s")
}
