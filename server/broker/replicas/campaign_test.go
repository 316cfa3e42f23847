package replicas

import (
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

var long = flag.Bool("long", false, "run the failover campaign: 100 master kills under load")

// TestGroupCampaign stops the master under load round after round (100
// rounds under -long, 2 otherwise), restarting it as a slave, and checks
// after each that every put acknowledged in the round is on the new
// master at its offset. It reports the failover times and the count of
// acknowledged puts lost (must be 0).
func TestGroupCampaign(t *testing.T) {
	rounds := 2
	if *long {
		rounds = 100
	}
	ctrls := controllers(t)
	nodes := make([]*node, 3)
	haOf := map[string]string{}
	for i := range nodes {
		nodes[i] = &node{dir: t.TempDir(), addr: freeAddr(t), haAddr: freeAddr(t)}
		haOf[nodes[i].addr] = nodes[i].haAddr
	}
	for _, n := range nodes {
		n.start(t, ctrls, haOf)
	}
	defer func() {
		for _, n := range nodes {
			if n.m != nil {
				n.m.Close()
			}
		}
	}()
	var epoch int32 = 1
	var failovers []time.Duration
	totalAcked, lost, next := 0, 0, 0
	for round := range rounds {
		m := master(t, nodes, epoch, fmt.Sprintf("round %d: no master", round))
		require.Eventually(t, func() bool { return len(syncStateSet(m)) == 3 }, 60*time.Second, 10*time.Millisecond,
			"round %d: SyncStateSet did not grow to 3", round)
		r, _ := m.m.Role()
		epoch = r.MasterEpoch
		st := m.m.Store()
		type sent struct {
			i        int
			off, end int64
		}
		var mu sync.Mutex
		var acked []sent
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ; ; next++ {
				res, err := st.PutMessage(msg(next))
				if err != nil {
					return
				}
				if res.Status == store.PutOK {
					mu.Lock()
					acked = append(acked, sent{next, res.WroteOffset, res.WroteOffset + int64(res.WroteBytes)})
					mu.Unlock()
				}
			}
		}()
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 50 }, 30*time.Second, time.Millisecond)
		before, _ := m.m.Role()
		killed := time.Now()
		require.NoError(t, m.m.Close())
		<-done
		m.m = nil
		old := m
		m = master(t, nodes, epoch+1, fmt.Sprintf("round %d: no new master", round))
		failovers = append(failovers, time.Since(killed))
		if end := m.m.Store().MaxPhyOffset(); len(acked) > 0 && end < acked[len(acked)-1].end {
			after, _ := m.m.Role()
			t.Fatalf("round %d: acknowledged up to %d, new master %d (epoch %d) ends at %d; the old master %d had SyncStateSet %v (epoch %d)",
				round, acked[len(acked)-1].end, after.BrokerID, after.MasterEpoch, end, before.BrokerID, before.SyncStateSet, before.SSEpoch)
		}
		for _, a := range acked {
			totalAcked++
			b := readLog(t, m.m.Store(), a.end)[a.off:a.end]
			if r, err := message.Parse(b); err != nil || string(r.Body()) != fmt.Sprintf("message %d", a.i) {
				lost++
			}
		}
		require.Zero(t, lost, "round %d: acknowledged puts lost", round)
		old.start(t, ctrls, haOf)
		r, _ = m.m.Role()
		epoch = r.MasterEpoch
	}
	slices.Sort(failovers)
	n := len(failovers)
	t.Logf("%d rounds: %d puts acknowledged under load, %d lost; failover (master stopped -> a new master serves): p50 %v p99 %v max %v",
		rounds, totalAcked, lost, failovers[n/2], failovers[(n*99)/100], failovers[n-1])
}
