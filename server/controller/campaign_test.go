package controller

import (
	"flag"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var long = flag.Bool("long", false, "run the controller failover campaign (100 rounds)")

// TestFailoverCampaign kills and restarts masters (their agents) and
// controllers at random, round after round, and checks after each that
// the group has exactly one master that every agent follows, with a
// master epoch that only grew, and that the controllers' replicated
// states agree. It reports the time from a master's death to the
// agreement on its successor. 100 rounds under -long, 4 otherwise.
func TestFailoverCampaign(t *testing.T) {
	rounds := 4
	if *long {
		rounds = 100
	}
	c := newCluster(t)
	c.leader()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	agents := make([]*testAgent, 3)
	addrs := make([]string, 3)
	for i := range agents {
		agents[i] = startAgent(t, c, dirs[i], "")
		addrs[i] = agents[i].o.BrokerAddr
	}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	var epoch int32
	// settle waits until every running agent follows one master with an
	// epoch of at least min, and returns it.
	settle := func(min int32, why string) (int, int32) {
		var m int
		var e int32
		require.Eventually(t, func() bool {
			var masterID int64
			m = -1
			for i, a := range agents {
				r, ok := a.Role()
				if !ok || r.MasterEpoch < min || (masterID != 0 && (r.MasterID != masterID || r.MasterEpoch != e)) {
					return false
				}
				masterID, e = r.MasterID, r.MasterEpoch
				if r.IsMaster() {
					m = i
				}
			}
			return m >= 0
		}, 30*time.Second, 10*time.Millisecond, why)
		return m, e
	}
	// expand: the master takes every replica into its SyncStateSet, as
	// a broker's master does once its slaves have caught up.
	expand := func(master int) {
		require.Eventually(t, func() bool {
			r, _ := agents[master].Role()
			if len(r.SyncStateSet) == 3 {
				return true
			}
			_, err := agents[master].AlterSyncStateSet([]int64{1, 2, 3})
			return err == nil
		}, 30*time.Second, 50*time.Millisecond, "SyncStateSet not expanded")
	}
	master, e := settle(1, "no master at start")
	epoch = e
	expand(master)
	var failovers []time.Duration
	kills := map[string]int{}
	for round := range rounds {
		switch rng.IntN(3) {
		case 0: // the master dies
			kills["master"]++
			agents[master].stop()
			killed := time.Now()
			var ids []int64
			for i, a := range agents {
				if i != master {
					ids = append(ids, a.BrokerID())
				}
			}
			require.Eventually(t, func() bool {
				for i, a := range agents {
					if i == master {
						continue
					}
					r, ok := a.Role()
					if !ok || r.MasterEpoch <= epoch || !slices.Contains(ids, r.MasterID) {
						return false
					}
				}
				return true
			}, 30*time.Second, 5*time.Millisecond, "round %d: no failover", round)
			failovers = append(failovers, time.Since(killed))
			agents[master] = startAgent(t, c, dirs[master], addrs[master])
		case 1: // the controller leader dies and comes back
			kills["controller leader"]++
			li := c.leader()
			require.NoError(t, c.nodes[li].Close())
			c.nodes[li] = nil
			c.leader()
			c.restart(li)
		case 2: // a follower controller dies and comes back
			kills["controller follower"]++
			li := c.leader()
			i := (li + 1 + rng.IntN(2)) % 3
			require.NoError(t, c.nodes[i].Close())
			c.nodes[i] = nil
			c.restart(i)
		}
		var e int32
		master, e = settle(epoch, "no agreed master after the round")
		require.GreaterOrEqual(t, e, epoch, "round %d: master epoch went back", round)
		epoch = e
		expand(master)
		// The controllers' states converge.
		require.Eventually(t, func() bool {
			var first *Group
			for _, n := range c.nodes {
				g := n.Group("b")
				if g == nil {
					return false
				}
				if first == nil {
					first = g
				} else if g.Master != first.Master || g.MasterEpoch != first.MasterEpoch || g.SSEpoch != first.SSEpoch {
					return false
				}
			}
			return true
		}, 30*time.Second, 20*time.Millisecond, "round %d: controllers disagree", round)
	}
	slices.Sort(failovers)
	if n := len(failovers); n > 0 {
		t.Logf("%d rounds %v; master epoch %d; failover (master agent stopped -> all agents follow a new master): p50 %v p99 %v max %v over %d",
			rounds, kills, epoch, failovers[n/2], failovers[(n*99)/100], failovers[n-1], n)
	}
}
