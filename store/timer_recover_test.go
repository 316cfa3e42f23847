package store

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/timer"
)

const timerChildEnv = "ROCKETSTORE_TIMER_CHILD"

// timerCrashOptions keep the files small, with the real clock.
func timerCrashOptions() Options {
	return Options{CommitLogFileSize: 4 << 20, TimerLogFileSize: 64 << 10, DisableIndex: true}
}

// delivered counts the messages of topic/qid by body.
func delivered(t *testing.T, s *MessageStore, topic string, qid int32) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, m := range queued(t, s, topic, qid) {
		got[string(m.Body)]++
	}
	return got
}

func TestTimer_PendingTimersSurviveACleanRestart(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s, err := Open(dir, timerOptions(clock))
	require.NoError(t, err)
	const n = 3000 // some 50 timer log files of 64 KiB
	for i := range n {
		at := clock.at(time.Duration(2+i%5) * time.Second)
		_, err := s.PutMessage(timerMessage("T", 0, strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10)))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { st, _ := s.TimerStatus(); return st.Enqueued == n }, 10*time.Second, time.Millisecond)
	clock.add(3 * time.Second) // the first two seconds are due
	require.Eventually(t, func() bool { return s.GetMaxOffsetInQueue("T", 0) == 2*n/5 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())

	s, err = Open(dir, timerOptions(clock))
	require.NoError(t, err)
	defer s.Close()
	clock.add(5 * time.Second)
	waitRead(t, s, clock.at(0))
	got := delivered(t, s, "T", 0)
	require.Len(t, got, n)
	for i := range n {
		require.Equal(t, 1, got[strconv.Itoa(i)], "timer %d", i)
	}
}

// TestTimer_Crash_SIGKILL puts timers in a child process and kills it at a
// random moment: while it enqueues, waits, or delivers. After a reopen,
// every acknowledged timer is delivered once, and none twice.
func TestTimer_Crash_SIGKILL(t *testing.T) {
	rounds := 4
	if *long {
		rounds = 30
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for round := range rounds {
		topic := "TK" + strconv.Itoa(round)
		due := time.Now().Add(1500 * time.Millisecond).UnixMilli()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), timerChildEnv+"="+dir, "ROCKETSTORE_TIMER_TOPIC="+topic,
			"ROCKETSTORE_TIMER_DUE="+strconv.FormatInt(due, 10))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan map[string]bool, 1)
		go func() {
			acked := map[string]bool{}
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if f := strings.TrimSpace(sc.Text()); f != "" && strings.HasPrefix(f, "ok ") {
					acked[strings.TrimPrefix(f, "ok ")] = true
				}
			}
			lines <- acked
		}()
		killAt := time.Duration(200+rng.IntN(4500)) * time.Millisecond
		time.Sleep(killAt) // a random moment, not a wait for something
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		var acked map[string]bool
		select {
		case acked = <-lines:
		case <-time.After(10 * time.Second):
			t.Fatal("the child's output did not end")
		}
		require.NotContains(t, stderr.String(), "child failed", stderr.String())

		s, err := Open(dir, timerCrashOptions())
		require.NoError(t, err, "round %d", round)
		last := due + 3000 // the child's timers are due over three seconds
		waitRead(t, s, last)
		got := delivered(t, s, topic, 0)
		for body, n := range got {
			require.Equal(t, 1, n, "round %d: timer %s delivered %d times (killed after %v)", round, body, n, killAt)
		}
		for body := range acked {
			require.Equal(t, 1, got[body], "round %d: acknowledged timer %s not delivered (killed after %v)", round, body, killAt)
		}
		st, _ := s.TimerStatus()
		t.Logf("round %d: killed after %v: %d acknowledged, %d delivered, %d deliveries skipped after the crash",
			round, killAt, len(acked), len(got), st.Skipped)
		require.NoError(t, s.Close())
	}
}

// timerChild puts timers due over three seconds from ROCKETSTORE_TIMER_DUE,
// prints "ok i" for each acknowledged one, then lets them be delivered
// until it is killed.
func timerChild(dir string) {
	s, err := Open(dir, timerCrashOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child failed:", err)
		os.Exit(1)
	}
	due, _ := strconv.ParseInt(os.Getenv("ROCKETSTORE_TIMER_DUE"), 10, 64)
	topic := os.Getenv("ROCKETSTORE_TIMER_TOPIC")
	w := bufio.NewWriter(os.Stdout)
	for i := range 20000 {
		at := due + int64(i%3)*1000
		m := timerMessage(topic, 0, strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10))
		if _, err := s.PutMessage(m); err != nil {
			fmt.Fprintln(os.Stderr, "child failed:", err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "ok %d\n", i)
		if i%50 == 0 {
			w.Flush()
		}
	}
	w.Flush()
	time.Sleep(time.Minute) // delivering, until the parent kills it
	os.Exit(0)
}

// TestTimer_RecoverRebuildsASlotPointingPastTheLog: after a power loss the
// wheel's page may reach the disk while the log's tail does not; a slot
// then points past the log's end. Recovery rebuilds it from the log.
func TestTimer_RecoverRebuildsASlotPointingPastTheLog(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s, err := Open(dir, timerOptions(clock))
	require.NoError(t, err)
	due := clock.at(3 * time.Second) // a whole second: its slot is one earlier
	for i := range 3 {
		_, err := s.PutMessage(timerMessage("T", 0, strconv.Itoa(i), message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { st, _ := s.TimerStatus(); return st.Enqueued == 3 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())

	w, err := timer.OpenWheel(filepath.Join(dir, "timerwheel"), 1000, nil)
	require.NoError(t, err)
	slot := w.Slot(due - 1000)
	require.EqualValues(t, 3, slot.Num)
	slot.LastPos = 1 << 30 // a unit the log lost
	w.Put(slot)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644)) // as a crash leaves it

	s, err = Open(dir, timerOptions(clock))
	require.NoError(t, err)
	defer s.Close()
	clock.add(4 * time.Second)
	waitRead(t, s, clock.at(0))
	require.Equal(t, map[string]int{"0": 1, "1": 1, "2": 1}, delivered(t, s, "T", 0))
}

// TestTimer_CrashBeforeTheFirstFlushResumesFromOpen: a crash after the
// timer log's first unit but before the loop's first flush left an empty
// checkpoint, and the reopened timer read from a week back (604,740 empty
// slots, longer than a wait under -race) and, with no DeliverFromOffset,
// made again the deliveries of the first step. The new files' checkpoint
// is durable before any unit, so delivery resumes where the timer began
// and skips what it delivered.
func TestTimer_CrashBeforeTheFirstFlushResumesFromOpen(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s, err := Open(dir, timerOptions(clock)) // no timer message: no timer files yet
	require.NoError(t, err)
	defer s.Close()
	tm, err := openTimer(s) // as the first timer message makes them; no loop runs
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "config", "timercheck"))
	require.NoError(t, err)
	cp := timer.DecodeCheckpoint(b)
	require.Equal(t, clock.at(0), cp.LastReadTimeMs, "the new checkpoint is written")
	require.True(t, cp.DeliverFromKnown)
	_, err = tm.log.Append(timer.Unit{PrevPos: -1, Magic: timer.MagicDefault, WriteTimeMs: clock.at(0), DelayMs: 5000, Size: 1})
	require.NoError(t, err)
	// A delivery the killed timer made before its first flush.
	_, err = s.PutMessage(&message.Message{Topic: "T", Body: []byte("d"), BornTimestamp: clock.at(0),
		Properties: message.EncodeProperties(map[string]string{message.PropertyUniqClientMessageIDKeyIndex: "ID-d",
			message.PropertyTimerEnqueueMS: strconv.FormatInt(clock.at(0), 10), message.PropertyTimerDequeueMS: strconv.FormatInt(clock.at(0), 10)})})
	require.NoError(t, err)
	require.NoError(t, tm.closeFiles()) // killed: no flush, no checkpoint
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))

	clock.add(2 * time.Second)
	tm, err = openTimer(s)
	require.NoError(t, err)
	defer tm.closeFiles()
	require.Equal(t, clock.at(-2*time.Second), tm.readTime, "delivery resumes where the timer began, not a week back")
	require.Len(t, tm.skip, 1, "the delivery made before the crash is not made again")
}
