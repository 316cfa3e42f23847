package ha

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/store"
)

// thenPut puts message i with PutMessageThen and returns a channel that
// gets its result, at once or once the slave answers.
func thenPut(t *testing.T, ms *store.MessageStore, i int) <-chan store.PutResult {
	t.Helper()
	got := make(chan store.PutResult, 1)
	res, done, err := ms.PutMessageThen(testMessage(i), func(res store.PutResult) { got <- res })
	require.NoError(t, err)
	if done {
		got <- res
	}
	return got
}

func recvResult(t *testing.T, ch <-chan store.PutResult, within time.Duration) store.PutResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(within):
		t.Fatalf("no answer within %v", within)
		return store.PutResult{}
	}
}

// TestSyncMaster_PutMessageThen: a put that must wait for the slave
// returns at once and is answered later: by the report that covers it
// (every put waiting together, by one report), with FlushSlaveTimeout when
// no report comes in time (each at its own deadline, the timer re-armed
// for the later ones), with SlaveNotAvailable at once when no slave is
// connected, and when the master closes.
func TestSyncMaster_PutMessageThen(t *testing.T) {
	ms := openStore(t, t.TempDir())
	opts := fastOptions(nil)
	opts.SlaveTimeout = 400 * time.Millisecond
	m := startMaster(t, ms, opts)
	ms.SetReplicaWaiter(m)

	res := recvResult(t, thenPut(t, ms, 0), time.Second)
	require.Equal(t, store.SlaveNotAvailable, res.Status, "no slave: answered at once")

	c := silentSlave(t, m.Addr().String(), ms.MaxPhyOffset())
	waitFor(t, 5*time.Second, "the slave", func() bool { return m.Slaves() == 1 })

	// Eight puts wait; one report answers them all, in one pass.
	var waiting []<-chan store.PutResult
	for i := range 8 {
		waiting = append(waiting, thenPut(t, ms, 1+i))
	}
	require.Equal(t, 8, m.group.pending(), "the puts wait, their callers do not")
	writeReport(t, c, ms.MaxPhyOffset())
	for _, ch := range waiting {
		res := recvResult(t, ch, 5*time.Second)
		require.Equal(t, store.PutOK, res.Status)
		require.LessOrEqual(t, res.WroteOffset+int64(res.WroteBytes), ms.MaxPhyOffset())
	}

	// No report: each times out at its own deadline.
	start := time.Now()
	first := thenPut(t, ms, 20)
	time.Sleep(opts.SlaveTimeout / 2) // a second deadline, later than the first
	second := thenPut(t, ms, 21)
	require.Equal(t, store.FlushSlaveTimeout, recvResult(t, first, 5*time.Second).Status)
	tookFirst := time.Since(start)
	require.GreaterOrEqual(t, tookFirst, opts.SlaveTimeout)
	select {
	case <-second:
		require.Fail(t, "the later put timed out with the first")
	default:
	}
	require.Equal(t, store.FlushSlaveTimeout, recvResult(t, second, 5*time.Second).Status)
	require.GreaterOrEqual(t, time.Since(start), opts.SlaveTimeout*3/2)

	// A put waiting when the master closes.
	last := thenPut(t, ms, 30)
	require.NoError(t, m.Close())
	require.Equal(t, store.SlaveNotAvailable, recvResult(t, last, 5*time.Second).Status)
}
