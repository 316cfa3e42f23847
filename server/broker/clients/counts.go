package clients

import (
	"cmp"
	"slices"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// ConnectionCount is how many open connections of one kind of client a
// group has: its language and version, and for consumers the consume type.
type ConnectionCount struct {
	Group       string
	Language    string
	Version     int
	ConsumeType ConsumeType // consumers only
	Count       int
}

// ConnectionCounts counts the open connections of every producer and
// consumer group by client kind, for the broker's metrics
// (rocketmq_producer_connections, rocketmq_consumer_connections). A
// connection in two groups counts in each. Both lists are sorted.
func (m *Manager) ConnectionCounts() (producers, consumers []ConnectionCount) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	count := func(out []ConnectionCount, group string, ct ConsumeType, ms []*member) []ConnectionCount {
		for _, mb := range ms {
			i := slices.IndexFunc(out, func(c ConnectionCount) bool {
				return c.Group == group && c.Language == mb.language && c.Version == mb.version && c.ConsumeType == ct
			})
			if i < 0 {
				out = append(out, ConnectionCount{Group: group, Language: mb.language, Version: mb.version, ConsumeType: ct})
				i = len(out) - 1
			}
			out[i].Count++
		}
		return out
	}
	for group, ms := range m.producers {
		producers = count(producers, group, "", openMembers(ms))
	}
	for group, g := range m.consumers {
		consumers = count(consumers, group, g.consumeType, openMembers(g.members))
	}
	sortCounts(producers)
	sortCounts(consumers)
	return producers, consumers
}

func openMembers(ms map[*remoting.Conn]*member) []*member {
	out := make([]*member, 0, len(ms))
	for c, mb := range ms {
		if !isClosed(c) {
			out = append(out, mb)
		}
	}
	return out
}

func sortCounts(cs []ConnectionCount) {
	slices.SortFunc(cs, func(a, b ConnectionCount) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Language, b.Language),
			cmp.Compare(a.Version, b.Version), cmp.Compare(a.ConsumeType, b.ConsumeType))
	})
}
