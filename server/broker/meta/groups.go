package meta

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// sysGroupPrefix starts the groups created even with auto-create off
// (MixAll.CID_RMQ_SYS_PREFIX; enableCreateSysGroup is on by default).
const sysGroupPrefix = "CID_RMQ_SYS_"

// systemGroups are the groups SubscriptionGroupManager's constructor
// makes (MixAll): TOOLS_CONSUMER, FILTERSRV_CONSUMER, SELF_TEST_C_GROUP,
// CID_ONS-HTTP-PROXY, CID_ONSAPI_PULL, CID_ONSAPI_PERMISSION,
// CID_ONSAPI_OWNER, CID_RMQ_SYS_TRANS.
var systemGroups = [...]string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP",
	"CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS"}

// SubscriptionGroupsOptions configures OpenSubscriptionGroups. The zero
// value is RocketMQ's default broker.
type SubscriptionGroupsOptions struct {
	// DisableAutoCreateGroup turns autoCreateSubscriptionGroup off:
	// FindOrCreate then creates only CID_RMQ_SYS_ groups.
	DisableAutoCreateGroup bool
	// Logger gets create, delete and fall-back-to-.bak events. nil: discard.
	Logger *slog.Logger
}

// SubscriptionGroups is RocketMQ's SubscriptionGroupManager: the config
// of each consumer group, kept in subscriptionGroup.json with its data
// version and the per-group topic "forbidden" bits of 5.x (kept as read).
// Every change bumps the data version and is durable (in the file's
// journal, see persister) before the method returns; changes made at the
// same time share one write. A SubscriptionGroups is safe for concurrent
// use.
type SubscriptionGroups struct {
	opts SubscriptionGroupsOptions
	log  *slog.Logger
	p    *persister

	mu        sync.RWMutex // guards table, forbidden, version
	table     map[string]SubscriptionGroupConfig
	forbidden map[string]map[string]int // group -> topic -> bits
	version   protocol.DataVersion
}

// OpenSubscriptionGroups loads the group configs from path
// ({storeRoot}/config/subscriptionGroup.json), over RocketMQ's system
// groups; configs in the file win. A missing file is an empty one; an
// unreadable one falls back to its .bak (logged), and fails with
// ErrCorrupt if that is unreadable too. Nothing is written until the
// first change or Persist.
func OpenSubscriptionGroups(path string, opts SubscriptionGroupsOptions) (*SubscriptionGroups, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &SubscriptionGroups{
		opts:      opts,
		log:       opts.Logger,
		table:     make(map[string]SubscriptionGroupConfig, 64),
		forbidden: map[string]map[string]int{},
		version:   protocol.DataVersion{Timestamp: time.Now().UnixMilli()},
	}
	for _, name := range systemGroups {
		g.table[name] = NewSubscriptionGroupConfig(name)
	}
	g.p = newPersister(path, nil, opts.Logger, g.mu.RLocker(), func() []byte { return g.encodeLocked(true) })
	if err := g.p.load(g.decode, g.apply); err != nil {
		return nil, err
	}
	return g, nil
}

// apply replays a journal record at open.
func (g *SubscriptionGroups) apply(r journalRecord) error {
	switch r.Kind {
	case recPut:
		var c SubscriptionGroupConfig
		if err := fastjson.Unmarshal(r.Value, &c); err != nil {
			return fmt.Errorf("group %s: %w", r.Key, err)
		}
		c.GroupName = r.Key
		g.table[r.Key] = c
	case recDel:
		delete(g.table, r.Key)
		delete(g.forbidden, r.Key)
	case recAux:
		var topics map[string]int
		if err := fastjson.Unmarshal(r.Value, &topics); err != nil {
			return fmt.Errorf("forbidden topics of group %s: %w", r.Key, err)
		}
		g.forbidden[r.Key] = topics
	case recClear:
		clear(g.table)
		clear(g.forbidden)
	default:
		return fmt.Errorf("record kind %q: %w", r.Kind, errJournal)
	}
	g.version = r.Version
	return nil
}

// encodeForbidden returns the forbidden bits of one group as JSON.
func encodeForbidden(topics map[string]int) []byte {
	w := fastjson.NewWriter(nil, false)
	writeForbidden(w, topics)
	return w.Bytes()
}

func writeForbidden(w *fastjson.Writer, topics map[string]int) {
	w.BeginObject()
	for _, topic := range slices.Sorted(maps.Keys(topics)) {
		w.Key(topic)
		w.Int(int64(topics[topic]))
	}
	w.End()
}

func (g *SubscriptionGroups) decode(data []byte) error {
	var f struct {
		DataVersion            *protocol.DataVersion               `json:"dataVersion"`
		ForbiddenTable         map[string]map[string]int           `json:"forbiddenTable"`
		SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := fastjson.Unmarshal(data, &f); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, c := range f.SubscriptionGroupTable {
		if c == nil {
			continue
		}
		if c.GroupName == "" {
			c.GroupName = name
		}
		g.table[name] = *c
	}
	for group, topics := range f.ForbiddenTable {
		if topics != nil {
			g.forbidden[group] = topics
		}
	}
	if f.DataVersion != nil {
		g.version = *f.DataVersion
	}
	return nil
}

// Get returns the config of group, if there is one.
func (g *SubscriptionGroups) Get(group string) (SubscriptionGroupConfig, bool) {
	g.mu.RLock()
	c, ok := g.table[group]
	g.mu.RUnlock()
	return c, ok
}

// FindOrCreate returns the config of group, creating it with
// NewSubscriptionGroupConfig's defaults if it is missing, auto-create is on
// (or the group starts with CID_RMQ_SYS_) and the name is valid
// (findSubscriptionGroupConfig). It returns false if there is no config.
// It does not wait for the new group to be durable: the next write of the
// table or Flush writes it (a group lost in a crash before that is made
// again by the client's next heartbeat).
func (g *SubscriptionGroups) FindOrCreate(group string) (SubscriptionGroupConfig, bool) {
	if c, ok := g.Get(group); ok {
		return c, true
	}
	if g.opts.DisableAutoCreateGroup && !strings.HasPrefix(group, sysGroupPrefix) {
		return SubscriptionGroupConfig{}, false
	}
	if err := validateGroup(group); err != nil {
		g.log.Warn("not creating a subscription group", "group", group, "err", err)
		return SubscriptionGroupConfig{}, false
	}
	g.mu.Lock()
	if c, ok := g.table[group]; ok {
		g.mu.Unlock()
		return c, true
	}
	c := NewSubscriptionGroupConfig(group)
	g.putLocked(c)
	g.mu.Unlock()
	g.log.Info("created a subscription group", "group", group)
	return c, true
}

// Update creates or replaces the config of cfg.GroupName
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, updateSubscriptionGroupConfig);
// the config is copied. It fails with ErrInvalidName for a name RocketMQ
// refuses. Once the name is validated the config is applied even if the
// file cannot be written; the error then says so.
func (g *SubscriptionGroups) Update(cfg SubscriptionGroupConfig) error {
	if err := validateGroup(cfg.GroupName); err != nil {
		return fmt.Errorf("meta: update subscription group: %w", err)
	}
	cfg = cfg.clone()
	g.mu.Lock()
	seq := g.putLocked(cfg)
	g.mu.Unlock()
	g.log.Info("updated a subscription group", "group", cfg.GroupName)
	return g.p.wait(seq)
}

// Delete removes the config of group and its forbidden bits
// (DELETE_SUBSCRIPTIONGROUP, deleteSubscriptionGroupConfig). Deleting a
// group that does not exist changes nothing and is no error.
func (g *SubscriptionGroups) Delete(group string) error {
	g.mu.Lock()
	_, ok := g.table[group]
	delete(g.forbidden, group)
	if !ok {
		g.mu.Unlock()
		return nil
	}
	delete(g.table, group)
	g.bumpLocked()
	seq := g.p.add(recDel, g.version, group, nil)
	g.mu.Unlock()
	g.log.Info("deleted a subscription group", "group", group)
	return g.p.wait(seq)
}

// All returns every group config, sorted by name.
func (g *SubscriptionGroups) All() []SubscriptionGroupConfig {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]SubscriptionGroupConfig, 0, len(g.table))
	for _, name := range slices.Sorted(maps.Keys(g.table)) {
		out = append(out, g.table[name])
	}
	return out
}

// Len returns the number of groups.
func (g *SubscriptionGroups) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.table)
}

// DataVersion returns the data version: a new counter and timestamp after
// every change.
func (g *SubscriptionGroups) DataVersion() protocol.DataVersion {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.version
}

// EncodeAllJSON returns the body of GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201): Java's SubscriptionGroupWrapper JSON, compact, groups sorted by
// name:
//
//	{"dataVersion":{...},"forbiddenTable":{},"subscriptionGroupTable":
//	 {"cg":{"attributes":{},"brokerId":0,...,"whichBrokerWhenConsumeSlowly":1}}}
func (g *SubscriptionGroups) EncodeAllJSON() []byte {
	return g.encode(false)
}

// encode writes SubscriptionGroupWrapper, which is also how a Java
// broker's SubscriptionGroupManager serializes itself.
func (g *SubscriptionGroups) encode(pretty bool) []byte {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.encodeLocked(pretty)
}

func (g *SubscriptionGroups) encodeLocked(pretty bool) []byte {
	w := fastjson.NewWriter(make([]byte, 0, 512*len(g.table)), pretty)
	w.BeginObject()
	w.Key("dataVersion")
	writeDataVersion(w, g.version)
	w.Key("forbiddenTable")
	w.BeginObject()
	for _, group := range slices.Sorted(maps.Keys(g.forbidden)) {
		w.Key(group)
		writeForbidden(w, g.forbidden[group])
	}
	w.End()
	w.Key("subscriptionGroupTable")
	w.BeginObject()
	for _, name := range slices.Sorted(maps.Keys(g.table)) {
		c := g.table[name]
		w.Key(name)
		writeGroupConfig(w, &c)
	}
	w.End()
	w.End()
	return w.Bytes()
}

// Persist writes subscriptionGroup.json whole now, in fastjson's pretty
// form as a Java broker writes it, and empties its journal. Changes
// persist by themselves; this is for shutdown.
func (g *SubscriptionGroups) Persist() error {
	return g.p.sync()
}

// Flush makes every change made so far durable (FindOrCreate's groups).
func (g *SubscriptionGroups) Flush() error { return g.p.flush() }

// putLocked stores c and queues its journal record.
func (g *SubscriptionGroups) putLocked(c SubscriptionGroupConfig) uint64 {
	g.table[c.GroupName] = c
	g.bumpLocked()
	return g.p.add(recPut, g.version, c.GroupName, EncodeGroupConfig(c))
}

func (g *SubscriptionGroups) bumpLocked() {
	nextVersion(&g.version)
}
