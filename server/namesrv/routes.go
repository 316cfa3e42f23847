package namesrv

import (
	"cmp"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// DefaultBrokerTimeout is how long a broker may stay silent before the
// name server drops it, unless it registers with heartbeatTimeoutMillis
// (RouteInfoManager's DEFAULT_BROKER_CHANNEL_EXPIRED_TIME).
const DefaultBrokerTimeout = 120 * time.Second

// BrokerRegistration is one REGISTER_BROKER request, header and body.
type BrokerRegistration struct {
	ClusterName  string
	BrokerName   string
	BrokerAddr   string
	BrokerID     int64
	HAServerAddr string
	ZoneName     string
	// HeartbeatTimeout: 0 means the name server's default.
	HeartbeatTimeout time.Duration
	// EnableActingMaster is nil for brokers older than 5.0, which do not
	// send it.
	EnableActingMaster *bool
	Topics             protocol.TopicConfigSerializeWrapper
	// FilterServerList: nil leaves the broker's filter servers as they are.
	FilterServerList []string
	// Compressed sends the body zlib-compressed (the broker's
	// compressedRegister); only RegisterRequest reads it.
	Compressed bool
}

// RegisterResult is the name server's answer to a registration: for a
// slave, its master's address and HA address.
type RegisterResult struct {
	HAServerAddr string
	MasterAddr   string
}

// brokerAddrKey names one broker process (RocketMQ's BrokerAddrInfo).
type brokerAddrKey struct {
	cluster, addr string
}

// liveInfo is RocketMQ's BrokerLiveInfo.
type liveInfo struct {
	lastUpdate   time.Time
	timeout      time.Duration
	dataVersion  protocol.DataVersion
	conn         *remoting.Conn // may be nil (registered in-process)
	haServerAddr string
}

// RouteTable is RocketMQ's RouteInfoManager: which brokers serve which
// topics with how many queues, and which brokers are alive. It is safe for
// concurrent use.
type RouteTable struct {
	now            func() time.Time
	defaultTimeout time.Duration
	log            *slog.Logger

	mu            sync.RWMutex                             // guards the tables below
	topicQueues   map[string]map[string]protocol.QueueData // topic -> broker name -> queues
	brokers       map[string]*protocol.BrokerData          // broker name -> addresses
	clusters      map[string]map[string]struct{}           // cluster -> broker names
	live          map[brokerAddrKey]*liveInfo
	filterServers map[brokerAddrKey][]string
}

// NewRouteTable returns an empty table. now and log may be nil (time.Now,
// discard); defaultTimeout 0 means DefaultBrokerTimeout.
func NewRouteTable(now func() time.Time, defaultTimeout time.Duration, log *slog.Logger) *RouteTable {
	if now == nil {
		now = time.Now
	}
	if defaultTimeout <= 0 {
		defaultTimeout = DefaultBrokerTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &RouteTable{
		now:            now,
		defaultTimeout: defaultTimeout,
		log:            log,
		topicQueues:    make(map[string]map[string]protocol.QueueData),
		brokers:        make(map[string]*protocol.BrokerData),
		clusters:       make(map[string]map[string]struct{}),
		live:           make(map[brokerAddrKey]*liveInfo),
		filterServers:  make(map[brokerAddrKey][]string),
	}
}

// RegisterBroker records a broker and its topics, as
// RouteInfoManager.registerBroker does. conn is the connection it came on
// (nil if none): closing it unregisters the broker.
//
// Unlike Java it does not refuse a first registration that carries exactly
// one topic (Java takes it for a 5.x single-topic registration arriving
// before the broker's full one): a broker of ours may well start with one.
func (t *RouteTable) RegisterBroker(r *BrokerRegistration, conn *remoting.Conn) RegisterResult {
	var result RegisterResult
	missing, heartbeat := t.checkHeartbeat(r)
	t.mu.Lock()
	defer t.mu.Unlock()

	names := t.clusters[r.ClusterName]
	if names == nil {
		names = make(map[string]struct{})
		t.clusters[r.ClusterName] = names
	}
	names[r.BrokerName] = struct{}{}

	registerFirst := false
	bd := t.brokers[r.BrokerName]
	if bd == nil {
		registerFirst = true
		bd = &protocol.BrokerData{Cluster: r.ClusterName, BrokerName: r.BrokerName, BrokerAddrs: make(map[int64]string)}
		t.brokers[r.BrokerName] = bd
	}
	oldVersionBroker := r.EnableActingMaster == nil
	bd.EnableActingMaster = !oldVersionBroker && *r.EnableActingMaster
	bd.ZoneName = r.ZoneName

	// A slave turned master: one address, one id.
	for id, addr := range bd.BrokerAddrs {
		if addr == r.BrokerAddr && id != r.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	// Another process claims this id: the higher state version wins.
	if old, ok := bd.BrokerAddrs[r.BrokerID]; ok && old != r.BrokerAddr {
		if oldLive := t.live[brokerAddrKey{r.ClusterName, old}]; oldLive != nil &&
			oldLive.dataVersion.StateVersion > r.Topics.DataVersion.StateVersion {
			t.log.Warn("namesrv: registering broker conflicts with the existing one, ignored",
				"cluster", r.ClusterName, "broker", r.BrokerName, "id", r.BrokerID, "old", old, "new", r.BrokerAddr)
			delete(t.live, brokerAddrKey{r.ClusterName, r.BrokerAddr})
			return result
		}
	}
	oldAddr := bd.BrokerAddrs[r.BrokerID]
	bd.BrokerAddrs[r.BrokerID] = r.BrokerAddr
	registerFirst = registerFirst || oldAddr == ""

	key := brokerAddrKey{r.ClusterName, r.BrokerAddr}
	isMaster := r.BrokerID == protocol.MasterID
	isPrimeSlave := !oldVersionBroker && !isMaster && r.BrokerID == minID(bd.BrokerAddrs)
	if isMaster || isPrimeSlave {
		// An unchanged data version (the broker's heartbeat every 30 s)
		// costs a look-up per topic, no more.
		changed := registerFirst || t.dataVersionChangedLocked(key, r.Topics.DataVersion)
		topics := maps.All(r.Topics.TopicConfigTable)
		if !changed && heartbeat {
			topics = maps.All(missing) // looked for under the read lock, without holding up look-ups
		}
		for name, tc := range topics {
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			if changed || !t.hasQueueDataLocked(tc.TopicName, r.BrokerName) {
				if isPrimeSlave && bd.EnableActingMaster {
					tc.Perm &^= protocol.PermWrite
				}
				t.updateQueueDataLocked(r.BrokerName, tc)
			}
		}
	}

	timeout := r.HeartbeatTimeout
	if timeout <= 0 {
		timeout = t.defaultTimeout
	}
	if _, ok := t.live[key]; !ok {
		t.log.Info("namesrv: new broker registered", "cluster", r.ClusterName, "broker", r.BrokerName,
			"id", r.BrokerID, "addr", r.BrokerAddr, "ha", r.HAServerAddr)
	}
	t.live[key] = &liveInfo{
		lastUpdate:   t.now(),
		timeout:      timeout,
		dataVersion:  r.Topics.DataVersion,
		conn:         conn,
		haServerAddr: r.HAServerAddr,
	}
	if r.FilterServerList != nil {
		if len(r.FilterServerList) == 0 {
			delete(t.filterServers, key)
		} else {
			t.filterServers[key] = slices.Clone(r.FilterServerList)
		}
	}
	if !isMaster {
		if masterAddr, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			if ml := t.live[brokerAddrKey{r.ClusterName, masterAddr}]; ml != nil {
				result.HAServerAddr = ml.haServerAddr
				result.MasterAddr = masterAddr
			}
		}
	}
	return result
}

// checkHeartbeat looks, under the read lock, whether r is the heartbeat
// of a broker registered at the same address with the same data version,
// and which of its topics have no queues here.
func (t *RouteTable) checkHeartbeat(r *BrokerRegistration) (missing map[string]protocol.TopicConfig, heartbeat bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	prev := t.live[brokerAddrKey{r.ClusterName, r.BrokerAddr}]
	if prev == nil || prev.dataVersion != r.Topics.DataVersion {
		return nil, false
	}
	if bd := t.brokers[r.BrokerName]; bd == nil || bd.BrokerAddrs[r.BrokerID] != r.BrokerAddr {
		return nil, false
	}
	for name, tc := range r.Topics.TopicConfigTable {
		if !t.hasQueueDataLocked(cmp.Or(tc.TopicName, name), r.BrokerName) {
			if missing == nil {
				missing = map[string]protocol.TopicConfig{}
			}
			missing[name] = tc
		}
	}
	return missing, true
}

func minID(addrs map[int64]string) int64 {
	first := true
	var m int64
	for id := range addrs {
		if first || id < m {
			m, first = id, false
		}
	}
	return m
}

// dataVersionChangedLocked reports whether v differs from the data version
// the broker at key last registered (or it never did).
func (t *RouteTable) dataVersionChangedLocked(key brokerAddrKey, v protocol.DataVersion) bool {
	prev := t.live[key]
	return prev == nil || prev.dataVersion != v
}

func (t *RouteTable) hasQueueDataLocked(topic, brokerName string) bool {
	_, ok := t.topicQueues[topic][brokerName]
	return ok
}

func (t *RouteTable) updateQueueDataLocked(brokerName string, tc protocol.TopicConfig) {
	qd := protocol.QueueData{
		BrokerName:     brokerName,
		Perm:           tc.Perm,
		ReadQueueNums:  tc.ReadQueueNums,
		TopicSysFlag:   tc.TopicSysFlag,
		WriteQueueNums: tc.WriteQueueNums,
	}
	m := t.topicQueues[tc.TopicName]
	if m == nil {
		m = make(map[string]protocol.QueueData)
		t.topicQueues[tc.TopicName] = m
		t.log.Info("namesrv: new topic registered", "topic", tc.TopicName, "broker", brokerName)
	} else if old, ok := m[brokerName]; ok && old != qd {
		t.log.Info("namesrv: topic changed", "topic", tc.TopicName, "broker", brokerName, "old", old, "new", qd)
	}
	m[brokerName] = qd
}

// UnregisterBroker removes a broker process, as
// RouteInfoManager.unRegisterBroker does: a broker group left with no
// address disappears, with its queues.
func (t *RouteTable) UnregisterBroker(cluster, addr, brokerName string, brokerID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unregisterLocked(cluster, addr, brokerName, brokerID)
}

func (t *RouteTable) unregisterLocked(cluster, addr, brokerName string, brokerID int64) {
	key := brokerAddrKey{cluster, addr}
	_, wasLive := t.live[key]
	delete(t.live, key)
	delete(t.filterServers, key)
	t.log.Info("namesrv: broker unregistered", "cluster", cluster, "broker", brokerName, "id", brokerID,
		"addr", addr, "wasLive", wasLive)

	bd := t.brokers[brokerName]
	if bd == nil {
		return
	}
	for id, a := range bd.BrokerAddrs {
		if a == addr {
			delete(bd.BrokerAddrs, id)
		}
	}
	if len(bd.BrokerAddrs) > 0 {
		// Reduced: with acting masters on and no master left, the queues
		// lose write permission.
		if bd.EnableActingMaster && minID(bd.BrokerAddrs) > protocol.MasterID {
			for _, m := range t.topicQueues {
				if qd, ok := m[brokerName]; ok {
					qd.Perm &^= protocol.PermWrite
					m[brokerName] = qd
				}
			}
		}
		return
	}
	delete(t.brokers, brokerName)
	if names := t.clusters[cluster]; names != nil {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(t.clusters, cluster)
		}
	}
	for topic, m := range t.topicQueues {
		delete(m, brokerName)
		if len(m) == 0 {
			delete(t.topicQueues, topic)
		}
	}
}

// unregisterKeyLocked unregisters the broker process at key, finding its
// name and id (RouteInfoManager.setupUnRegisterRequest).
func (t *RouteTable) unregisterKeyLocked(key brokerAddrKey) {
	for name, bd := range t.brokers {
		if bd.Cluster != key.cluster {
			continue
		}
		for id, addr := range bd.BrokerAddrs {
			if addr == key.addr {
				t.unregisterLocked(key.cluster, key.addr, name, id)
				return
			}
		}
	}
	delete(t.live, key) // known as live only
	delete(t.filterServers, key)
}

// ConnClosed unregisters the brokers that registered on conn
// (RouteInfoManager.onChannelDestroy).
func (t *RouteTable) ConnClosed(conn *remoting.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, li := range t.live {
		if li.conn == conn {
			t.log.Info("namesrv: broker connection closed, unregistering", "cluster", key.cluster, "addr", key.addr)
			t.unregisterKeyLocked(key)
		}
	}
}

// ScanInactiveBrokers drops the brokers silent for longer than their
// heartbeat timeout and closes their connections
// (RouteInfoManager.scanNotActiveBroker). It returns the addresses
// dropped.
func (t *RouteTable) ScanInactiveBrokers() []string {
	now := t.now()
	var dropped []string
	var conns []*remoting.Conn
	t.mu.Lock()
	for key, li := range t.live {
		if li.lastUpdate.Add(li.timeout).Before(now) {
			t.log.Warn("namesrv: broker expired", "cluster", key.cluster, "addr", key.addr,
				"silentFor", now.Sub(li.lastUpdate), "timeout", li.timeout)
			t.unregisterKeyLocked(key)
			dropped = append(dropped, key.addr)
			if li.conn != nil {
				conns = append(conns, li.conn)
			}
		}
	}
	t.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	slices.Sort(dropped)
	return dropped
}

// Touch records that a broker is alive without re-registering it
// (BROKER_HEARTBEAT, QUERY_DATA_VERSION).
func (t *RouteTable) Touch(cluster, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if li := t.live[brokerAddrKey{cluster, addr}]; li != nil {
		li.lastUpdate = t.now()
	}
}

// BrokerDataVersion returns the data version the broker process last
// registered, and whether it is registered.
func (t *RouteTable) BrokerDataVersion(cluster, addr string) (protocol.DataVersion, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	li := t.live[brokerAddrKey{cluster, addr}]
	if li == nil {
		return protocol.DataVersion{}, false
	}
	return li.dataVersion, true
}

// TopicRoute returns the route of a topic: its queues on every broker and
// those brokers' addresses. It reports false, as Java's
// pickupTopicRouteData returns null, unless the topic has queues and at
// least one of their brokers is known.
func (t *RouteTable) TopicRoute(topic string) (*protocol.TopicRouteData, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := t.topicQueues[topic]
	if len(m) == 0 {
		return nil, false
	}
	r := &protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		r.QueueDatas = append(r.QueueDatas, m[name])
		bd := t.brokers[name]
		if bd == nil {
			continue
		}
		r.BrokerDatas = append(r.BrokerDatas, bd.Clone())
		for _, addr := range bd.BrokerAddrs {
			if fs, ok := t.filterServers[brokerAddrKey{bd.Cluster, addr}]; ok {
				r.FilterServerTable[addr] = slices.Clone(fs)
			}
		}
	}
	if len(r.BrokerDatas) == 0 {
		return nil, false
	}
	return r, true
}

// ClusterInfo returns every broker group and cluster.
func (t *RouteTable) ClusterInfo() *protocol.ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := &protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]protocol.BrokerData, len(t.brokers)),
		ClusterAddrTable: make(map[string][]string, len(t.clusters)),
	}
	for name, bd := range t.brokers {
		ci.BrokerAddrTable[name] = bd.Clone()
	}
	for cluster, names := range t.clusters {
		ci.ClusterAddrTable[cluster] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

// Topics returns every topic with queues, sorted.
func (t *RouteTable) Topics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.topicQueues))
}

// TopicsOfCluster returns the topics with queues on the cluster's brokers,
// sorted.
func (t *RouteTable) TopicsOfCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for topic, m := range t.topicQueues {
		for name := range t.clusters[cluster] {
			if _, ok := m[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// DeleteTopic removes a topic's queues: on every broker when cluster is
// empty, else on the cluster's brokers only.
func (t *RouteTable) DeleteTopic(topic, cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cluster == "" {
		delete(t.topicQueues, topic)
		return
	}
	m := t.topicQueues[topic]
	if m == nil {
		return
	}
	for name := range t.clusters[cluster] {
		delete(m, name)
	}
	if len(m) == 0 {
		delete(t.topicQueues, topic)
	}
}

// RegisterTopic adds queues of a topic on known brokers
// (REGISTER_TOPIC_IN_NAMESRV). Nothing is added if one broker is unknown.
func (t *RouteTable) RegisterTopic(topic string, queues []protocol.QueueData) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, q := range queues {
		if t.brokers[q.BrokerName] == nil {
			t.log.Warn("namesrv: topic registration names an unknown broker, ignored", "topic", topic, "broker", q.BrokerName)
			return
		}
	}
	if len(queues) == 0 {
		return
	}
	m := t.topicQueues[topic]
	if m == nil {
		m = make(map[string]protocol.QueueData, len(queues))
		t.topicQueues[topic] = m
	}
	for _, q := range queues {
		m[q.BrokerName] = q
	}
}

// SetWritePerm takes write permission away from (or, with allow, gives
// read and write permission back to) every topic on a broker group
// (WIPE_WRITE_PERM_OF_BROKER, ADD_WRITE_PERM_OF_BROKER). It returns the
// number of topics changed.
func (t *RouteTable) SetWritePerm(brokerName string, allow bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.topicQueues {
		qd, ok := m[brokerName]
		if !ok {
			continue
		}
		if allow {
			qd.Perm = protocol.PermRead | protocol.PermWrite
		} else {
			qd.Perm &^= protocol.PermWrite
		}
		m[brokerName] = qd
		n++
	}
	return n
}
