package meta

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// What a slave takes from its master (RocketMQ's SlaveSynchronize), and
// what a master answers it with.

// ErrNoDataVersion refuses a master's topic or group table that carries no
// data version: a slave could not tell later whether it changed.
var ErrNoDataVersion = errors.New("meta: the master's table has no dataVersion")

// ReplaceFromMaster makes the topic table the master's, given the body of
// its GET_ALL_TOPIC_CONFIG answer (TopicConfigSerializeWrapper), unless
// the data versions are equal already; topics the master lacks go, the
// data version becomes the master's, and the file is written. It reports
// whether the table changed.
func (t *Topics) ReplaceFromMaster(body []byte) (bool, error) {
	var w struct {
		DataVersion      *protocol.DataVersion            `json:"dataVersion"`
		TopicConfigTable map[string]*protocol.TopicConfig `json:"topicConfigTable"`
	}
	if err := fastjson.Unmarshal(body, &w); err != nil {
		return false, fmt.Errorf("meta: the master's topic configs: %w", err)
	}
	if w.DataVersion == nil {
		return false, ErrNoDataVersion
	}
	table := make(map[string]protocol.TopicConfig, len(w.TopicConfigTable))
	for name, c := range w.TopicConfigTable {
		if c == nil {
			continue
		}
		if c.TopicName == "" {
			c.TopicName = name
		}
		table[name] = *c
	}
	t.mu.Lock()
	if t.version == *w.DataVersion {
		t.mu.Unlock()
		return false, nil
	}
	t.table, t.version = table, *w.DataVersion
	t.p.add(recClear, t.version, "", nil)
	for _, name := range slices.Sorted(maps.Keys(table)) {
		t.p.add(recPut, t.version, name, EncodeTopicConfig(table[name]))
	}
	t.mu.Unlock()
	return true, t.Persist()
}

// ReplaceFromMaster makes the group table the master's, given the body of
// its GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer (SubscriptionGroupWrapper),
// as Topics.ReplaceFromMaster does for topics.
func (g *SubscriptionGroups) ReplaceFromMaster(body []byte) (bool, error) {
	var f struct {
		DataVersion            *protocol.DataVersion               `json:"dataVersion"`
		ForbiddenTable         map[string]map[string]int           `json:"forbiddenTable"`
		SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return false, fmt.Errorf("meta: the master's subscription groups: %w", err)
	}
	if f.DataVersion == nil {
		return false, ErrNoDataVersion
	}
	table := make(map[string]SubscriptionGroupConfig, len(f.SubscriptionGroupTable))
	for name, c := range f.SubscriptionGroupTable {
		if c == nil {
			continue
		}
		if c.GroupName == "" {
			c.GroupName = name
		}
		table[name] = *c
	}
	forbidden := map[string]map[string]int{}
	for group, topics := range f.ForbiddenTable {
		if topics != nil {
			forbidden[group] = topics
		}
	}
	g.mu.Lock()
	if g.version == *f.DataVersion {
		g.mu.Unlock()
		return false, nil
	}
	g.table, g.forbidden, g.version = table, forbidden, *f.DataVersion
	g.p.add(recClear, g.version, "", nil)
	for _, name := range slices.Sorted(maps.Keys(table)) {
		g.p.add(recPut, g.version, name, EncodeGroupConfig(table[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(forbidden)) {
		g.p.add(recAux, g.version, name, encodeForbidden(forbidden[name]))
	}
	g.mu.Unlock()
	return true, g.Persist()
}

// EncodeAllJSON returns the body of GET_ALL_CONSUMER_OFFSET (43): Java's
// ConsumerOffsetSerializeWrapper JSON, compact, keys sorted:
//
//	{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},
//	 "offsetTable":{"TopicTest@cg":{0:123,1:456}}}
func (o *Offsets) EncodeAllJSON() []byte { return o.encodeWith(false, true) }

// CommitOwn is Commit on a slave: the offset is also remembered as the
// slave's own until MergeFromMaster finds the master at or past it, so
// that a commit a client made here while the master was away is neither
// overwritten by the master's older offset nor lost to it.
func (o *Offsets) CommitOwn(group, topic string, queueID int32, offset int64) {
	k := topicGroup{topic, group}
	o.ownMu.Lock()
	defer o.ownMu.Unlock()
	o.Commit(group, topic, queueID, offset)
	if o.own == nil {
		o.own = map[topicGroup]map[int32]int64{}
	}
	if o.own[k] == nil {
		o.own[k] = map[int32]int64{}
	}
	o.own[k][queueID] = offset
}

// CommitForward commits offset unless the queue has a greater one: how a
// master takes the offsets its slave hands back (MergeFromMaster's), so
// that it never moves backwards past a client's newer commit. It reports
// whether it committed.
func (o *Offsets) CommitForward(group, topic string, queueID int32, offset int64) bool {
	return o.commit(group, topic, queueID, offset, true)
}

// MergeFromMaster takes the master's offsets, given the body of its
// GET_ALL_CONSUMER_OFFSET answer, over this table (SlaveSynchronize's
// putAll, queue by queue), except where the slave has a greater offset of
// its own (CommitOwn) that the master has not reached: those stay, and are
// returned, for the caller to hand to the master. An own offset the
// master has reached is forgotten. Offsets the master lacks stay.
func (o *Offsets) MergeFromMaster(body []byte) ([]GroupOffsets, error) {
	var f struct {
		OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	}
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("meta: the master's consumer offsets: %w", err)
	}
	o.ownMu.Lock()
	defer o.ownMu.Unlock()
	for key, offs := range f.OffsetTable {
		topic, group, ok := strings.Cut(key, topicGroupSeparator)
		if !ok {
			continue
		}
		k := topicGroup{topic, group}
		own := o.own[k]
		for qid, off := range offs {
			if mine, ok := own[qid]; ok {
				if mine > off {
					continue
				}
				delete(own, qid)
			}
			o.Commit(group, topic, qid, off)
		}
		if own != nil && len(own) == 0 {
			delete(o.own, k)
		}
	}
	ahead := make([]GroupOffsets, 0, len(o.own))
	for k, own := range o.own {
		ahead = append(ahead, GroupOffsets{Group: k.group, Topic: k.topic, Offsets: maps.Clone(own)})
	}
	slices.SortFunc(ahead, func(a, b GroupOffsets) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic))
	})
	return ahead, nil
}
