package meta

import (
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// Defaults of TopicsOptions (RocketMQ's BrokerConfig).
const (
	// DefaultClusterName is brokerClusterName's default.
	DefaultClusterName = "DefaultCluster"
	// DefaultBrokerName is brokerName's default where the host name is
	// unknown (RocketMQ uses the host name).
	DefaultBrokerName = "DEFAULT_BROKER"
	// DefaultTopicQueueNums is defaultTopicQueueNums: TBW102's queues.
	DefaultTopicQueueNums = 8
	// DefaultBrokerPermission is brokerPermission's default: read|write.
	DefaultBrokerPermission = protocol.PermRead | protocol.PermWrite
	// MaxQueueNums bounds a topic's read and write queue counts. RocketMQ
	// has no bound; a client given a route of 2^31-1 queues makes an
	// object per queue and runs out of memory, so a count above this is
	// refused with an error that says so.
	MaxQueueNums = 65536
)

// System topics and TopicConfig defaults (TopicValidator, MixAll,
// PopAckConstants, TopicConfig).
const (
	defaultTopicFilterType      = "SINGLE_TAG"
	defaultQueueNumsOfTopic     = 16 // TopicConfig's own default
	scheduleTopicQueueNums      = 18 // one per delay level
	benchmarkTopicQueueNums     = 1024
	reviveQueueNums             = 8 // BrokerConfig.reviveQueueNum
	topicSelfTest               = "SELF_TEST_TOPIC"
	topicBenchmark              = "BenchmarkTest"
	topicOffsetMovedEvent       = "OFFSET_MOVED_EVENT"
	replyTopicSuffix            = "_REPLY_TOPIC"
	reviveTopicPrefix           = message.SystemTopicPrefix + "REVIVE_LOG_"
	syncBrokerMemberTopicPrefix = message.SystemTopicPrefix + "SYNC_BROKER_MEMBER_"
	permReadWrite               = protocol.PermRead | protocol.PermWrite
	permAll                     = protocol.PermRead | protocol.PermWrite | protocol.PermInherit
	permMask                    = protocol.PermPriority | permAll
)

// TopicsOptions configures OpenTopics. The zero value is RocketMQ's
// default broker.
type TopicsOptions struct {
	// BrokerName and ClusterName name two of the system topics.
	// "": DefaultBrokerName, DefaultClusterName.
	BrokerName  string
	ClusterName string
	// DisableAutoCreateTopic turns autoCreateTopicEnable off: no TBW102,
	// and sends to unknown topics are refused.
	DisableAutoCreateTopic bool
	// DefaultTopicQueueNums is TBW102's queue count. 0: 8.
	DefaultTopicQueueNums int
	// BrokerPermission is the broker's own permission; unless it has both
	// read and write, Wrapper masks every topic's perm with it. 0: 6.
	BrokerPermission int
	// Logger gets create, delete and fall-back-to-.bak events. nil: discard.
	Logger *slog.Logger
}

func (o TopicsOptions) withDefaults() TopicsOptions {
	if o.BrokerName == "" {
		o.BrokerName = DefaultBrokerName
	}
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.DefaultTopicQueueNums == 0 {
		o.DefaultTopicQueueNums = DefaultTopicQueueNums
	}
	if o.BrokerPermission == 0 {
		o.BrokerPermission = DefaultBrokerPermission
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o TopicsOptions) validate() error {
	var errs []error
	if o.DefaultTopicQueueNums < 0 || o.DefaultTopicQueueNums > MaxQueueNums {
		errs = append(errs, fmt.Errorf("DefaultTopicQueueNums %d is outside [1, %d]", o.DefaultTopicQueueNums, MaxQueueNums))
	}
	if o.BrokerPermission&^permMask != 0 || o.BrokerPermission < 0 {
		errs = append(errs, fmt.Errorf("BrokerPermission %d is not a combination of 8 (priority), 4 (read), 2 (write), 1 (inherit)", o.BrokerPermission))
	}
	return errors.Join(errs...)
}

// Topics is RocketMQ's TopicConfigManager: the broker's topic configs and
// their data version, kept in topics.json and its journal. Every change
// bumps the data version and is durable before the method returns;
// changes made at the same time share one write (see persister). A Topics
// is safe for concurrent use.
//
// The Attributes map of a returned TopicConfig is shared with the Topics:
// read it, never modify it.
type Topics struct {
	opts TopicsOptions
	log  *slog.Logger
	p    *persister

	mu         sync.RWMutex // guards table, version, brokerPerm
	table      map[string]protocol.TopicConfig
	version    protocol.DataVersion
	brokerPerm int
}

// OpenTopics loads the topic configs from path ({storeRoot}/config/
// topics.json), over RocketMQ's system topics: SELF_TEST_TOPIC, TBW102
// (unless auto-create is off), BenchmarkTest, the cluster and broker name
// topics, OFFSET_MOVED_EVENT, SCHEDULE_TOPIC_XXXX, {cluster}_REPLY_TOPIC,
// rmq_sys_REVIVE_LOG_{cluster}, rmq_sys_SYNC_BROKER_MEMBER_{broker},
// RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC and
// rmq_sys_wheel_timer. Configs in the file win over these. A missing file
// is an empty one; an unreadable one falls back to its .bak (logged), and
// fails with ErrCorrupt if that is unreadable too. Nothing is written
// until the first change or Persist.
func OpenTopics(path string, opts TopicsOptions) (*Topics, error) {
	return openTopicsFS(path, opts, nil)
}

// openTopicsFS is OpenTopics over fsys (nil: the operating system's).
func openTopicsFS(path string, opts TopicsOptions, fsys vfs.FS) (*Topics, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	t := &Topics{
		opts:       opts,
		log:        opts.Logger,
		table:      make(map[string]protocol.TopicConfig, 64),
		version:    protocol.DataVersion{Timestamp: time.Now().UnixMilli()},
		brokerPerm: opts.BrokerPermission,
	}
	for _, c := range systemTopics(opts) {
		t.table[c.TopicName] = c
	}
	t.p = newPersister(path, fsys, opts.Logger, t.mu.RLocker(), func() []byte { return t.encodeLocked(true) })
	if err := t.p.load(t.decode, t.apply); err != nil {
		return nil, err
	}
	return t, nil
}

// systemTopics are the topics TopicConfigManager's constructor makes.
func systemTopics(o TopicsOptions) []protocol.TopicConfig {
	tc := func(name string, queues, perm int) protocol.TopicConfig {
		return protocol.TopicConfig{
			Attributes:      map[string]string{},
			Perm:            perm,
			ReadQueueNums:   queues,
			WriteQueueNums:  queues,
			TopicFilterType: defaultTopicFilterType,
			TopicName:       name,
		}
	}
	topics := []protocol.TopicConfig{tc(topicSelfTest, 1, permReadWrite)}
	if !o.DisableAutoCreateTopic {
		topics = append(topics, tc(message.TopicAutoCreate, o.DefaultTopicQueueNums, permAll))
	}
	return append(topics,
		tc(topicBenchmark, benchmarkTopicQueueNums, permReadWrite),
		tc(o.ClusterName, defaultQueueNumsOfTopic, permAll), // clusterTopicEnable
		tc(o.BrokerName, 1, permAll),                        // brokerTopicEnable
		tc(topicOffsetMovedEvent, 1, permReadWrite),
		tc(message.TopicSchedule, scheduleTopicQueueNums, permReadWrite),
		tc(o.ClusterName+replyTopicSuffix, 1, permReadWrite),
		tc(reviveTopicPrefix+o.ClusterName, reviveQueueNums, permReadWrite),
		tc(syncBrokerMemberTopicPrefix+o.BrokerName, 1, protocol.PermInherit),
		tc(message.TopicTransHalf, 1, permReadWrite),
		tc(message.TopicTransOpHalf, 1, permReadWrite),
		tc(message.TopicTimer, 1, permReadWrite), // timerWheelEnable
	)
}

// decode applies a topics.json: its configs over the table, its data
// version. Nothing changes if it does not read.
func (t *Topics) decode(data []byte) error {
	var w struct {
		DataVersion      *protocol.DataVersion            `json:"dataVersion"`
		TopicConfigTable map[string]*protocol.TopicConfig `json:"topicConfigTable"`
	}
	if err := fastjson.Unmarshal(data, &w); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, c := range w.TopicConfigTable {
		if c == nil {
			continue // "T":null
		}
		if c.TopicName == "" {
			c.TopicName = name
		}
		t.table[name] = *c
	}
	if w.DataVersion != nil {
		t.version = *w.DataVersion
	}
	return nil
}

// apply replays a journal record at open.
func (t *Topics) apply(r journalRecord) error {
	switch r.Kind {
	case recPut:
		var c protocol.TopicConfig
		if err := fastjson.Unmarshal(r.Value, &c); err != nil {
			return fmt.Errorf("topic %s: %w", r.Key, err)
		}
		c.TopicName = r.Key
		t.table[r.Key] = c
	case recDel:
		delete(t.table, r.Key)
	case recClear:
		clear(t.table)
	default:
		return fmt.Errorf("record kind %q: %w", r.Kind, errJournal)
	}
	t.version = r.Version
	return nil
}

// Get returns the config of topic (selectTopicConfig).
func (t *Topics) Get(topic string) (protocol.TopicConfig, bool) {
	t.mu.RLock()
	c, ok := t.table[topic]
	t.mu.RUnlock()
	return c, ok
}

// Name returns the name of the topic called name as the table holds it,
// so that a name read from a request need not be made into a string. A
// nil Topics knows none.
func (t *Topics) Name(name []byte) (string, bool) {
	if t == nil {
		return "", false
	}
	t.mu.RLock()
	c, ok := t.table[string(name)]
	t.mu.RUnlock()
	return c.TopicName, ok
}

// CreateInSendMessage finds topic or creates it from defaultTopic, for a
// send to a topic the broker does not have (createTopicInSendMessageMethod).
// The new topic inherits from defaultTopic (TBW102, or the producer's
// createTopicKey) if that has the inherit bit: min(clientDefaultQueueNums,
// its write queues) queues each way, its perm without the inherit bit, its
// filter type, and topicSysFlag. With auto-create off TBW102 never
// passes on its perm. It returns the config and true if it created it;
// the config and false if topic already existed; a zero config and false
// if creating it is not allowed. A non-nil error means the topic was
// created but topics.json could not be written.
func (t *Topics) CreateInSendMessage(topic, defaultTopic string, clientDefaultQueueNums int, topicSysFlag int) (protocol.TopicConfig, bool, error) {
	t.mu.Lock()
	if c, ok := t.table[topic]; ok {
		t.mu.Unlock()
		return c, false, nil
	}
	def, ok := t.table[defaultTopic]
	if !ok {
		t.mu.Unlock()
		t.log.Warn("not creating a topic: its default topic does not exist", "topic", topic, "defaultTopic", defaultTopic)
		return protocol.TopicConfig{}, false, nil
	}
	perm := def.Perm
	if defaultTopic == message.TopicAutoCreate && t.opts.DisableAutoCreateTopic {
		perm = permReadWrite
	}
	if perm&protocol.PermInherit == 0 {
		t.mu.Unlock()
		t.log.Warn("not creating a topic: its default topic may not be inherited", "topic", topic, "defaultTopic", defaultTopic, "perm", perm)
		return protocol.TopicConfig{}, false, nil
	}
	queues := max(min(clientDefaultQueueNums, def.WriteQueueNums, MaxQueueNums), 0)
	c := protocol.TopicConfig{
		Attributes:      map[string]string{},
		Perm:            perm &^ protocol.PermInherit,
		ReadQueueNums:   queues,
		WriteQueueNums:  queues,
		TopicFilterType: def.TopicFilterType,
		TopicName:       topic,
		TopicSysFlag:    topicSysFlag,
	}
	seq := t.putLocked(c)
	t.mu.Unlock()
	t.log.Info("created a topic from its default topic", "topic", topic, "defaultTopic", defaultTopic,
		"queues", queues, "perm", c.Perm)
	return c, true, t.p.wait(seq)
}

// CreateLazily is CreateInSendMessageBack without the wait for the new
// topic to be durable: the next write of the table or Flush writes it.
// It is for topics a client makes again if they are lost in a crash (a
// consumer group's retry topic, made at each heartbeat).
func (t *Topics) CreateLazily(topic string, queueNums, perm, topicSysFlag int) protocol.TopicConfig {
	c, _ := t.createBack(topic, queueNums, perm, topicSysFlag)
	return c
}

// Flush makes every change made so far durable (CreateLazily's topics).
func (t *Topics) Flush() error { return t.p.flush() }

// CreateInSendMessageBack finds topic or creates it with queueNums queues
// each way, perm and topicSysFlag: the %RETRY% and %DLQ% topics of
// consumer groups (createTopicInSendMessageBackMethod). A non-nil error
// means the topic was created but topics.json could not be written.
func (t *Topics) CreateInSendMessageBack(topic string, queueNums, perm, topicSysFlag int) (protocol.TopicConfig, error) {
	c, seq := t.createBack(topic, queueNums, perm, topicSysFlag)
	if seq == 0 {
		return c, nil
	}
	return c, t.p.wait(seq)
}

// createBack finds or creates topic; seq is the journal record of the
// creation, 0 if it existed.
func (t *Topics) createBack(topic string, queueNums, perm, topicSysFlag int) (protocol.TopicConfig, uint64) {
	t.mu.Lock()
	if c, ok := t.table[topic]; ok {
		t.mu.Unlock()
		return c, 0
	}
	c := protocol.TopicConfig{
		Attributes:      map[string]string{},
		Perm:            perm,
		ReadQueueNums:   queueNums,
		WriteQueueNums:  queueNums,
		TopicFilterType: defaultTopicFilterType,
		TopicName:       topic,
		TopicSysFlag:    topicSysFlag,
	}
	seq := t.putLocked(c)
	t.mu.Unlock()
	t.log.Info("created a topic", "topic", topic, "queues", queueNums, "perm", perm)
	return c, seq
}

// Update creates or replaces the config of cfg.TopicName
// (UPDATE_AND_CREATE_TOPIC, updateTopicConfig). An empty TopicFilterType
// becomes SINGLE_TAG; Attributes are copied and stored as given. It fails
// with ErrInvalidName for a name RocketMQ refuses, and on negative queue
// counts or an unknown perm bit. Once the config is validated it is
// applied even if topics.json cannot be written; the error then says so.
func (t *Topics) Update(cfg protocol.TopicConfig) error {
	return t.UpdateAll([]protocol.TopicConfig{cfg})
}

// UpdateAll is Update for many configs at once
// (UPDATE_AND_CREATE_TOPIC_LIST): every config is checked before any is
// applied, and all are made durable by one write.
func (t *Topics) UpdateAll(cfgs []protocol.TopicConfig) error {
	cfgs = slices.Clone(cfgs)
	for i := range cfgs {
		if err := checkTopicConfig(&cfgs[i]); err != nil {
			return err
		}
	}
	if len(cfgs) == 0 {
		return nil
	}
	var seq uint64
	t.mu.Lock()
	for _, cfg := range cfgs {
		_, existed := t.table[cfg.TopicName]
		seq = t.putLocked(cfg)
		if existed {
			t.log.Info("updated a topic", "topic", cfg.TopicName, "read", cfg.ReadQueueNums, "write", cfg.WriteQueueNums, "perm", cfg.Perm)
		} else {
			t.log.Info("created a topic", "topic", cfg.TopicName, "read", cfg.ReadQueueNums, "write", cfg.WriteQueueNums, "perm", cfg.Perm)
		}
	}
	t.mu.Unlock()
	return t.p.wait(seq)
}

// checkTopicConfig validates cfg for Update and fills its defaults.
func checkTopicConfig(cfg *protocol.TopicConfig) error {
	if err := message.ValidateTopic(cfg.TopicName); err != nil {
		return fmt.Errorf("meta: update topic: %w: %w", ErrInvalidName, err)
	}
	if cfg.ReadQueueNums < 0 || cfg.WriteQueueNums < 0 || cfg.Perm < 0 || cfg.Perm&^permMask != 0 {
		return fmt.Errorf("meta: update topic %s: read %d, write %d queues and perm %d: queue counts must not be negative, perm is a combination of 8, 4, 2, 1",
			cfg.TopicName, cfg.ReadQueueNums, cfg.WriteQueueNums, cfg.Perm)
	}
	if cfg.ReadQueueNums > MaxQueueNums || cfg.WriteQueueNums > MaxQueueNums {
		return fmt.Errorf("meta: update topic %s: read %d, write %d queues: at most %d queues each way: %w",
			cfg.TopicName, cfg.ReadQueueNums, cfg.WriteQueueNums, MaxQueueNums, ErrTooManyQueues)
	}
	if cfg.TopicFilterType == "" {
		cfg.TopicFilterType = defaultTopicFilterType
	}
	cfg.Attributes = maps.Clone(cfg.Attributes)
	if cfg.Attributes == nil {
		cfg.Attributes = map[string]string{}
	}
	return nil
}

// Delete removes the config of topic (DELETE_TOPIC_IN_BROKER,
// deleteTopicConfig). Deleting a topic that does not exist changes
// nothing and is no error.
func (t *Topics) Delete(topic string) error {
	t.mu.Lock()
	if _, ok := t.table[topic]; !ok {
		t.mu.Unlock()
		return nil
	}
	delete(t.table, topic)
	t.bumpLocked()
	seq := t.p.add(recDel, t.version, topic, nil)
	t.mu.Unlock()
	t.log.Info("deleted a topic", "topic", topic)
	return t.p.wait(seq)
}

// All returns every topic config, sorted by name.
func (t *Topics) All() []protocol.TopicConfig {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]protocol.TopicConfig, 0, len(t.table))
	for _, name := range slices.Sorted(maps.Keys(t.table)) {
		out = append(out, t.table[name])
	}
	return out
}

// Len returns the number of topics.
func (t *Topics) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.table)
}

// DataVersion returns the data version: a new counter and timestamp after
// every change.
func (t *Topics) DataVersion() protocol.DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// SetBrokerPermission changes the broker's own permission (the
// brokerPermission of UPDATE_BROKER_CONFIG; 4 after wipeWritePerm). It
// only changes what Wrapper reports.
func (t *Topics) SetBrokerPermission(perm int) error {
	if perm <= 0 || perm&^permMask != 0 {
		return fmt.Errorf("meta: broker permission %d is not a combination of 8, 4, 2, 1", perm)
	}
	t.mu.Lock()
	t.brokerPerm = perm
	t.mu.Unlock()
	return nil
}

// Wrapper returns the topic configs and data version for REGISTER_BROKER
// (buildTopicConfigSerializeWrapper), each topic's perm masked with the
// broker permission if that lacks read or write (registerBrokerAll). The
// result is a copy the caller owns.
func (t *Topics) Wrapper() protocol.TopicConfigSerializeWrapper {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.wrapperLocked(maps.Keys(t.table), len(t.table))
}

// WrapperOf is Wrapper for the named topics only, those that exist, with
// the data version of the whole table: the body of an incremental
// registration (registerIncrementBrokerData) after they changed.
func (t *Topics) WrapperOf(names []string) protocol.TopicConfigSerializeWrapper {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.wrapperLocked(slices.Values(names), len(names))
}

func (t *Topics) wrapperLocked(names iter.Seq[string], n int) protocol.TopicConfigSerializeWrapper {
	mask := t.brokerPerm&protocol.PermRead == 0 || t.brokerPerm&protocol.PermWrite == 0
	table := make(map[string]protocol.TopicConfig, n)
	for name := range names {
		c, ok := t.table[name]
		if !ok {
			continue
		}
		c.Attributes = maps.Clone(c.Attributes)
		if mask {
			c.Perm &= t.brokerPerm
		}
		table[name] = c
	}
	return protocol.TopicConfigSerializeWrapper{DataVersion: t.version, TopicConfigTable: table}
}

// EncodeAllJSON returns the body of GET_ALL_TOPIC_CONFIG (21): Java's
// TopicConfigSerializeWrapper JSON, compact, topics sorted by name:
//
//	{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},
//	 "topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,
//	  "readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T",
//	  "topicSysFlag":0,"writeQueueNums":8}}}
func (t *Topics) EncodeAllJSON() []byte {
	return t.encode(false)
}

func (t *Topics) encode(pretty bool) []byte {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.encodeLocked(pretty)
}

func (t *Topics) encodeLocked(pretty bool) []byte {
	w := fastjson.NewWriter(make([]byte, 0, 256*len(t.table)), pretty)
	writeTopicWrapper(w, t.table, t.version)
	return w.Bytes()
}

// Persist writes topics.json whole now, in fastjson's pretty form as a
// Java broker writes it, and empties its journal. Changes persist by
// themselves; this is for shutdown, after which the file alone is the
// table.
func (t *Topics) Persist() error {
	return t.p.sync()
}

// putLocked stores c and queues its journal record.
func (t *Topics) putLocked(c protocol.TopicConfig) uint64 {
	t.table[c.TopicName] = c
	t.bumpLocked()
	return t.p.add(recPut, t.version, c.TopicName, EncodeTopicConfig(c))
}

func (t *Topics) bumpLocked() {
	nextVersion(&t.version)
}
