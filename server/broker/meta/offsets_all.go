package meta

import (
	"cmp"
	"maps"
	"slices"
)

// GroupOffsets are the committed offsets of one consumer group in one
// topic, by queue id.
type GroupOffsets struct {
	Group, Topic string
	Offsets      map[int32]int64 // a copy
}

// All returns a copy of every group's offsets, sorted by group, then
// topic: what the broker's lag metrics are computed from.
func (o *Offsets) All() []GroupOffsets {
	o.mu.RLock()
	out := make([]GroupOffsets, 0, len(o.table))
	qs := make([]*queueOffsets, 0, len(o.table))
	for k, q := range o.table {
		out = append(out, GroupOffsets{Group: k.group, Topic: k.topic})
		qs = append(qs, q)
	}
	o.mu.RUnlock()
	for i, q := range qs {
		q.mu.Lock()
		out[i].Offsets = maps.Clone(q.offs)
		q.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b GroupOffsets) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic))
	})
	return out
}
