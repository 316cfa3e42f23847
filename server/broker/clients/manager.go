package clients

import (
	"cmp"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// ErrClosed: the Manager is closed.
var ErrClosed = errors.New("clients: manager closed")

// Defaults of Options.
const (
	DefaultChannelExpiredTimeout = 120 * time.Second // BrokerConfig.channelExpiredTimeout
	DefaultScanInterval          = 10 * time.Second  // ClientHousekeepingService period
	DefaultNotifyTimeout         = 3 * time.Second
)

// Options configure a Manager. The zero value works.
type Options struct {
	// ChannelExpiredTimeout drops a client from a group when it has sent
	// no heartbeat naming the group for this long (≤0: 120 s).
	ChannelExpiredTimeout time.Duration
	// ScanInterval is how often expired clients are looked for (≤0: 10 s).
	ScanInterval time.Duration
	// NotifyTimeout bounds the write of one NOTIFY_CONSUMER_IDS_CHANGED
	// (≤0: 3 s). Writes that miss it close the connection, as any timed-out
	// write does in package remoting.
	NotifyTimeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives client joins, leaves and expiries (nil: discard).
	Logger *slog.Logger

	// OnConsumerHeartbeat runs for each consumer group of each heartbeat,
	// before the client is registered in the group, outside the Manager's
	// lock. It is the broker's part of ClientManageProcessor.heartBeat:
	// find or create the subscription group config, and create the
	// group's retry topic %RETRY%<group> (with cd.UnitMode and whether
	// cd subscribes to an order topic deciding its flags). It returns the
	// group's notifyConsumerIdsChangedEnable. A non-nil error leaves the
	// client out of the group for this heartbeat (RocketMQ: no subscription
	// group config and auto-creation off); the heartbeat is still answered
	// SUCCESS and the error is logged. It runs every 30 s per client and
	// group, so it must be cheap when everything exists. It must not call
	// the Manager's methods that change state. nil: notify, always register.
	OnConsumerHeartbeat func(cd *ConsumerData) (notify bool, err error)
}

func (o Options) withDefaults() Options {
	if o.ChannelExpiredTimeout <= 0 {
		o.ChannelExpiredTimeout = DefaultChannelExpiredTimeout
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = DefaultScanInterval
	}
	if o.NotifyTimeout <= 0 {
		o.NotifyTimeout = DefaultNotifyTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Manager keeps the broker's clients: the members and subscriptions of
// each consumer group (RocketMQ's ConsumerManager), the members of each
// producer group (ProducerManager), and drops clients whose connection
// closed or who went silent (ClientHousekeepingService). It tells the
// members of a consumer group when the group changes
// (DefaultConsumerIdsChangeListener). Methods are safe for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu        sync.RWMutex // guards consumers, producers, producerIDs, conns, topics
	consumers map[string]*consumerGroup
	producers map[string]map[*remoting.Conn]*member
	// producerIDs finds a producer's connection by client id (reply
	// messages). Last registration wins.
	producerIDs map[string]*remoting.Conn
	// conns lists the groups each connection is a member of.
	conns map[*remoting.Conn]*connGroups
	// topics lists the consumer groups subscribed to each topic.
	topics map[string]map[string]struct{}

	rr atomic.Uint32 // round robin of ProducerConn

	notifier notifier

	stop   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
}

// member is one client connection in a group (RocketMQ's ClientChannelInfo).
type member struct {
	clientID   string
	language   string
	version    int
	lastUpdate time.Time
}

type consumerGroup struct {
	name             string
	consumeType      ConsumeType
	messageModel     MessageModel
	consumeFromWhere ConsumeFromWhere
	unitMode         bool
	notify           bool // notifyConsumerIdsChangedEnable, from the last heartbeat
	lastUpdate       time.Time
	members          map[*remoting.Conn]*member
	subs             map[string]*Subscription // by topic
}

type connGroups struct {
	consumers map[string]struct{}
	producers map[string]struct{}
}

func (c *connGroups) empty() bool { return len(c.consumers) == 0 && len(c.producers) == 0 }

// New returns a Manager and starts its scan for silent clients. Close
// stops it.
func New(opts Options) *Manager {
	opts = opts.withDefaults()
	m := &Manager{
		opts:        opts,
		log:         opts.Logger,
		consumers:   make(map[string]*consumerGroup),
		producers:   make(map[string]map[*remoting.Conn]*member),
		producerIDs: make(map[string]*remoting.Conn),
		conns:       make(map[*remoting.Conn]*connGroups),
		topics:      make(map[string]map[string]struct{}),
		stop:        make(chan struct{}),
	}
	m.notifier.init(m)
	m.wg.Go(m.scanLoop)
	return m
}

// Close stops the scan and the notifications (those being written finish
// first, within NotifyTimeout) and waits for the Manager's goroutines. The
// bookkeeping stays readable and writable; nothing is notified any more.
// Calls after the first return ErrClosed.
func (m *Manager) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(m.stop)
	m.notifier.close()
	m.wg.Wait()
	return nil
}

func (m *Manager) scanLoop() {
	t := time.NewTicker(m.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.ScanNotActive()
		}
	}
}

// Member is one client connection in a group.
type Member struct {
	ClientID string
	Conn     *remoting.Conn
	// Language and Version are the client's, from the heartbeat's request
	// header ("GO" and 317 from the Go client).
	Language   string
	Version    int
	LastUpdate time.Time // last heartbeat naming the group
}

// GroupInfo is a consumer group as the broker knows it from heartbeats
// (RocketMQ's ConsumerGroupInfo). It is a copy: it does not change when the
// group does.
type GroupInfo struct {
	Group            string
	ConsumeType      ConsumeType
	MessageModel     MessageModel
	ConsumeFromWhere ConsumeFromWhere
	UnitMode         bool
	// NotifyIDsChanged is whether members are told of changes (the
	// subscription group's notifyConsumerIdsChangedEnable).
	NotifyIDsChanged bool
	LastUpdate       time.Time
	// Members are sorted by client id, then connection id.
	Members []Member
	// Subscriptions are sorted by topic; see Subscription for sharing.
	Subscriptions []Subscription
}

// Group returns a consumer group, or false when no client is in it.
func (m *Manager) Group(group string) (GroupInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.consumers[group]
	if !ok {
		return GroupInfo{}, false
	}
	gi := GroupInfo{
		Group:            g.name,
		ConsumeType:      g.consumeType,
		MessageModel:     g.messageModel,
		ConsumeFromWhere: g.consumeFromWhere,
		UnitMode:         g.unitMode,
		NotifyIDsChanged: g.notify,
		LastUpdate:       g.lastUpdate,
		Members:          membersOf(g.members),
		Subscriptions:    make([]Subscription, 0, len(g.subs)),
	}
	for _, s := range g.subs {
		gi.Subscriptions = append(gi.Subscriptions, *s)
	}
	slices.SortFunc(gi.Subscriptions, func(a, b Subscription) int { return cmp.Compare(a.Topic, b.Topic) })
	return gi, true
}

func membersOf(ms map[*remoting.Conn]*member) []Member {
	out := make([]Member, 0, len(ms))
	for c, mb := range ms {
		out = append(out, Member{ClientID: mb.clientID, Conn: c, Language: mb.language, Version: mb.version, LastUpdate: mb.lastUpdate})
	}
	slices.SortFunc(out, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Conn.ID(), b.Conn.ID()))
	})
	return out
}

// Subscription returns a consumer group's subscription to a topic, or
// false when the group is unknown or does not subscribe to it
// (ConsumerManager.findSubscriptionData). The pull processor filters with
// it.
func (m *Manager) Subscription(group, topic string) (Subscription, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g, ok := m.consumers[group]; ok {
		if s, ok := g.subs[topic]; ok {
			return *s, true
		}
	}
	return Subscription{}, false
}

// ConsumerIDs returns the client ids of a consumer group's members whose
// connection is open, sorted, without duplicates (a client with two
// connections is listed once); nil for an unknown group. It is the body of
// GET_CONSUMER_LIST_BY_GROUP, which clients rebalance by.
func (m *Manager) ConsumerIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.consumers[group]
	if !ok {
		return nil
	}
	ids := make([]string, 0, len(g.members))
	for c, mb := range g.members {
		if !isClosed(c) {
			ids = append(ids, mb.clientID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// ConsumerConn returns the connection of a consumer group's member with
// the given client id (ConsumerManager.findChannel), for requests to that
// client (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY).
func (m *Manager) ConsumerConn(group, clientID string) (*remoting.Conn, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.consumers[group]
	if !ok {
		return nil, false
	}
	var found *remoting.Conn
	for c, mb := range g.members {
		if mb.clientID == clientID && !isClosed(c) && (found == nil || c.ID() > found.ID()) {
			found = c // the newest connection of the client
		}
	}
	return found, found != nil
}

// ConsumerGroupsOfTopic returns the consumer groups subscribed to a topic,
// sorted (ConsumerManager.queryTopicConsumeByWho).
func (m *Manager) ConsumerGroupsOfTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gs := make([]string, 0, len(m.topics[topic]))
	for g := range m.topics[topic] {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	return gs
}

// ConsumerGroups returns the names of the consumer groups with members,
// sorted.
func (m *Manager) ConsumerGroups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gs := make([]string, 0, len(m.consumers))
	for g := range m.consumers {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	return gs
}

// Producers returns the members of a producer group, sorted by client id;
// nil for an unknown group.
func (m *Manager) Producers(group string) []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.producers[group]
	if !ok {
		return nil
	}
	return membersOf(g)
}

// ProducerConn returns an open connection of a producer group, taking the
// members in turn (ProducerManager.getAvailableChannel), for transaction
// check-backs (CHECK_TRANSACTION_STATE).
func (m *Manager) ProducerConn(group string) (*remoting.Conn, bool) {
	m.mu.RLock()
	ms := membersOf(m.producers[group])
	m.mu.RUnlock()
	if len(ms) == 0 {
		return nil, false
	}
	start := int(m.rr.Add(1) % uint32(len(ms)))
	for i := range ms {
		if c := ms[(start+i)%len(ms)].Conn; !isClosed(c) {
			return c, true
		}
	}
	return nil, false
}

// ProducerConnByClientID returns the connection of a producer by client id
// (ProducerManager.findChannel), for replies (PUSH_REPLY_MESSAGE_TO_CLIENT
// to the request's REPLY_TO_CLIENT).
func (m *Manager) ProducerConnByClientID(clientID string) (*remoting.Conn, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.producerIDs[clientID]
	if !ok || isClosed(c) {
		return nil, false
	}
	return c, true
}

func isClosed(c *remoting.Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}
