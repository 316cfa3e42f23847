package controller

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// BrokerLive is what a controller last heard from a broker's
// BROKER_HEARTBEAT: kept per controller, never replicated (upstream's
// BrokerLiveInfo).
type BrokerLive struct {
	Cluster       string
	BrokerName    string
	BrokerID      int64
	Addr          string
	Last          time.Time
	Timeout       time.Duration
	Epoch         int32
	MaxOffset     int64
	ConfirmOffset int64
	// Priority is brokerElectionPriority: lower wins among equals.
	Priority int64
	conn     *remoting.Conn
}

type liveKey struct {
	name string
	id   int64
}

// liveness is the heartbeat table of one controller.
type liveness struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[liveKey]*BrokerLive
}

func newLiveness(now func() time.Time) *liveness {
	return &liveness{now: now, m: map[liveKey]*BrokerLive{}}
}

// beat records a heartbeat.
func (l *liveness) beat(b BrokerLive, conn *remoting.Conn) {
	b.Last = l.now()
	b.conn = conn
	l.mu.Lock()
	l.m[liveKey{b.BrokerName, b.BrokerID}] = &b
	l.mu.Unlock()
}

// get returns what is known of a live broker.
func (l *liveness) get(name string, id int64) (BrokerLive, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[liveKey{name, id}]
	if b == nil || l.now().Sub(b.Last) >= b.Timeout {
		return BrokerLive{}, false
	}
	return *b, true
}

// alive reports whether a broker's last heartbeat is within its timeout.
func (l *liveness) alive(name string, id int64) bool {
	_, ok := l.get(name, id)
	return ok
}

// expire removes the brokers whose heartbeats stopped and returns them.
func (l *liveness) expire() []BrokerLive {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []BrokerLive
	now := l.now()
	for k, b := range l.m {
		if now.Sub(b.Last) >= b.Timeout {
			out = append(out, *b)
			delete(l.m, k)
		}
	}
	return out
}

// closed removes the brokers that were last heard on conn (a broker that
// has since heartbeat on another connection stays: a late close of a
// stale channel must not evict it, upstream's #11045) and returns them.
func (l *liveness) closed(conn *remoting.Conn) []BrokerLive {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []BrokerLive
	for k, b := range l.m {
		if b.conn == conn {
			out = append(out, *b)
			delete(l.m, k)
		}
	}
	return out
}

// elect is the election policy (upstream's DefaultElectPolicy): among the
// live members of the SyncStateSet (or, with unclean, of all replicas when
// none of those lives), the old master if it lives and no other was
// designated; a designated id if it is a live candidate (else nobody);
// otherwise the highest epoch, then the highest max offset, then the
// lowest priority, then the lowest id. 0: nobody.
func elect(g *Group, live func(id int64) (BrokerLive, bool), unclean bool, designated int64) int64 {
	if id := tryElect(g, g.SyncStateSet, live, designated); id != 0 {
		return id
	}
	if unclean {
		return tryElect(g, g.IDs(), live, designated)
	}
	return 0
}

func tryElect(g *Group, ids []int64, live func(id int64) (BrokerLive, bool), designated int64) int64 {
	var cands []BrokerLive
	for _, id := range ids {
		if _, ok := g.Replicas[id]; !ok {
			continue
		}
		if b, ok := live(id); ok {
			b.BrokerID = id
			cands = append(cands, b)
		}
	}
	if len(cands) == 0 {
		return 0
	}
	has := func(id int64) bool {
		return slices.ContainsFunc(cands, func(b BrokerLive) bool { return b.BrokerID == id })
	}
	if g.Master != 0 && has(g.Master) && (designated == 0 || designated == g.Master) {
		return g.Master
	}
	if designated != 0 {
		if has(designated) {
			return designated
		}
		return 0
	}
	best := slices.MinFunc(cands, func(a, b BrokerLive) int {
		return cmp.Or(
			cmp.Compare(b.Epoch, a.Epoch),
			cmp.Compare(b.MaxOffset, a.MaxOffset),
			cmp.Compare(a.Priority, b.Priority),
			cmp.Compare(a.BrokerID, b.BrokerID),
		)
	})
	return best.BrokerID
}
