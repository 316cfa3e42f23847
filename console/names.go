package console

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
)

// namesTTL is how long a list of names is served before it is fetched
// again, in the background: a list of 25,000 topics or 10,000 groups is
// megabytes from the name server or each broker, too much to fetch for
// every page of 50.
const namesTTL = 5 * time.Second

// names is a sorted list of topic or group names, with each name in lower
// case for the filter and, for groups, a master that has the group.
type names struct {
	list  []string
	lower []string
	kind  []string // of topics: topicKind
	by    map[string]string
}

func newNames(list []string, by map[string]string, kind func(string) string) *names {
	n := &names{list: list, lower: make([]string, len(list)), kind: make([]string, len(list)), by: by}
	for i, s := range list {
		n.lower[i] = strings.ToLower(s)
		n.kind[i] = kind(s)
	}
	return n
}

// filter returns the names that contain q (any case) and are of kind
// ("" or "all": any).
func (n *names) filter(q, kind string) []string {
	q = strings.ToLower(q)
	var out []string
	for i, s := range n.list {
		if (q == "" || strings.Contains(n.lower[i], q)) && (kind == "" || kind == "all" || n.kind[i] == kind) {
			out = append(out, s)
		}
	}
	return out
}

// namesCache serves a list of names, fetching it once and then again in
// the background when it is older than namesTTL (the page in hand is
// drawn from the list before). One fetch runs at a time; pages that need
// the list before it has any wait for that fetch. The console's own
// writes drop it.
type namesCache struct {
	fetch func(ctx context.Context) (*names, error)

	mu       sync.Mutex // guards what follows
	cur      *names
	at       time.Time
	err      error         // of the last fetch
	inflight chan struct{} // closed when the running fetch ends; nil: none
	gen      int           // bumped by drop: a fetch begun before keeps nothing
}

func (nc *namesCache) get(ctx context.Context, c *Console) (*names, error) {
	nc.mu.Lock()
	if nc.cur != nil {
		cur := nc.cur
		if time.Since(nc.at) > namesTTL {
			nc.startLocked(c)
		}
		nc.mu.Unlock()
		return cur, nil
	}
	ch := nc.startLocked(c)
	nc.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.cur == nil {
		return nil, nc.err
	}
	return nc.cur, nil
}

// startLocked starts a fetch unless one runs, and returns its channel.
func (nc *namesCache) startLocked(c *Console) chan struct{} {
	if nc.inflight != nil {
		return nc.inflight
	}
	ch := make(chan struct{})
	nc.inflight = ch
	gen := nc.gen
	c.wg.Go(func() {
		ctx, cancel := c.stoppable(4 * c.opts.Timeout)
		defer cancel()
		n, err := nc.fetch(ctx)
		nc.mu.Lock()
		defer nc.mu.Unlock()
		nc.inflight, nc.err = nil, err
		close(ch)
		if err != nil {
			c.log.Warn("fetching a list of names", "err", err)
			return
		}
		if gen == nc.gen {
			nc.cur, nc.at = n, time.Now()
		}
	})
	return ch
}

// drop forgets the list: the next page fetches it.
func (nc *namesCache) drop() {
	nc.mu.Lock()
	nc.cur = nil
	nc.gen++
	nc.mu.Unlock()
}

// fetchTopics lists every topic of the name servers
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
func (c *Console) fetchTopics(ctx context.Context) (*names, error) {
	l, err := c.ac.TopicList(ctx)
	if err != nil {
		return nil, err
	}
	return newNames(l, nil, topicKind), nil
}

// fetchGroups lists the consumer groups of every master
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG on each), with a master of each.
func (c *Console) fetchGroups(ctx context.Context) (*names, error) {
	masters, _, err := c.masters(ctx)
	if err != nil {
		return nil, err
	}
	brokers := slices.Sorted(maps.Keys(masters))
	lists := make([][]admin.SubscriptionGroupConfig, len(brokers))
	errs := make([]error, len(brokers))
	parallel(len(brokers), 8, func(i int) {
		lists[i], errs[i] = c.ac.AllSubscriptionGroups(ctx, masters[brokers[i]])
	})
	by := map[string]string{}
	for i, l := range lists {
		for _, sg := range l {
			if _, ok := by[sg.GroupName]; !ok {
				by[sg.GroupName] = masters[brokers[i]]
			}
		}
	}
	if len(by) == 0 {
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return newNames(slices.Sorted(maps.Keys(by)), by, groupKind), nil
}
