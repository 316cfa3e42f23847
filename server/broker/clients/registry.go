package clients

import (
	"time"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// notice asks to tell conns that group's membership or subscriptions
// changed.
type notice struct {
	group string
	conns []*remoting.Conn
}

// Heartbeat registers the client on conn in the producer and consumer
// groups of hb (ClientManageProcessor.heartBeat): a new member, or a new
// client id on a known connection, is added; a known one has its last
// update time refreshed. Each consumer group takes the heartbeat's consume
// type, message model and consume-from-where, and its subscriptions (see
// Subscription for the versions) unless hb.WithoutSub. When a consumer
// group gains a member or its subscriptions change, every member is sent
// NOTIFY_CONSUMER_IDS_CHANGED (not for BROADCASTING groups, nor when
// OnConsumerHeartbeat says not to). language and version are the client's,
// from the request header.
//
// A heartbeat on a connection that has already closed is ignored, so a
// client can never stay registered on a dead connection.
func (m *Manager) Heartbeat(conn *remoting.Conn, language string, version int, hb *HeartbeatData) {
	type accepted struct {
		cd     *ConsumerData
		subs   []Subscription
		notify bool
	}
	var consumers []accepted
	for i := range hb.ConsumerDataSet {
		cd := &hb.ConsumerDataSet[i]
		if cd.GroupName == "" {
			continue
		}
		notify := true
		if m.opts.OnConsumerHeartbeat != nil {
			var err error
			if notify, err = m.opts.OnConsumerHeartbeat(cd); err != nil {
				m.log.Warn("consumer heartbeat refused", "group", cd.GroupName, "client", hb.ClientID, "conn", conn, "err", err)
				continue
			}
		}
		subs := make([]Subscription, len(cd.SubscriptionDataSet))
		for j, sd := range cd.SubscriptionDataSet {
			subs[j] = newSubscription(sd)
		}
		consumers = append(consumers, accepted{cd, subs, notify})
	}

	now := m.opts.Now()
	mb := member{clientID: hb.ClientID, language: language, version: version, lastUpdate: now}
	var notices []notice

	m.mu.Lock()
	if isClosed(conn) {
		// ConnClosed has run or will run for conn only after this check
		// (Done closes before the close listeners run): nothing to undo.
		m.mu.Unlock()
		m.log.Debug("heartbeat on a closed connection ignored", "client", hb.ClientID, "conn", conn)
		return
	}
	for _, a := range consumers {
		if m.registerConsumerLocked(conn, mb, a.cd, a.subs, !hb.WithoutSub, a.notify, now) {
			g := m.consumers[a.cd.GroupName]
			if g.notify && g.messageModel != Broadcasting {
				notices = append(notices, notice{g.name, connsOf(g.members)})
			}
		}
	}
	for _, pd := range hb.ProducerDataSet {
		if pd.GroupName != "" {
			m.registerProducerLocked(conn, mb, pd.GroupName)
		}
	}
	m.mu.Unlock()
	m.notifyAll(notices)
}

// registerConsumerLocked adds or refreshes conn in a consumer group and
// reports whether its members or subscriptions changed
// (ConsumerManager.registerConsumer).
func (m *Manager) registerConsumerLocked(conn *remoting.Conn, mb member, cd *ConsumerData, subs []Subscription, withSubs, notify bool, now time.Time) bool {
	g, ok := m.consumers[cd.GroupName]
	if !ok {
		g = &consumerGroup{
			name:    cd.GroupName,
			members: make(map[*remoting.Conn]*member),
			subs:    make(map[string]*Subscription),
		}
		m.consumers[cd.GroupName] = g
	}
	g.consumeType = cd.ConsumeType
	g.messageModel = cd.MessageModel
	g.consumeFromWhere = cd.ConsumeFromWhere
	g.unitMode = cd.UnitMode
	g.notify = notify
	g.lastUpdate = now

	changed := false
	old, ok := g.members[conn]
	switch {
	case !ok:
		nm := mb
		g.members[conn] = &nm
		m.connGroupsLocked(conn).consumers[g.name] = struct{}{}
		changed = true
		m.log.Info("consumer joined", "group", g.name, "client", mb.clientID, "conn", conn,
			"consumeType", g.consumeType, "messageModel", g.messageModel, "members", len(g.members))
	case old.clientID != mb.clientID:
		m.log.Warn("consumer connection changed its client id", "group", g.name, "old", old.clientID, "new", mb.clientID, "conn", conn)
		*old = mb
		changed = true
	default:
		*old = mb
	}
	if withSubs && m.updateSubscriptionsLocked(g, subs) {
		changed = true
	}
	return changed
}

// updateSubscriptionsLocked makes g's subscriptions those of one heartbeat
// (ConsumerGroupInfo.updateSubscription): topics not in subs are dropped, new
// ones added, and a known topic's subscription replaced when the heartbeat's
// has a greater SubVersion. It reports whether a topic was added or dropped
// or a replacement filters differently.
func (m *Manager) updateSubscriptionsLocked(g *consumerGroup, subs []Subscription) bool {
	changed := false
	seen := make(map[string]struct{}, len(subs))
	for i := range subs {
		s := &subs[i]
		seen[s.Topic] = struct{}{}
		old, ok := g.subs[s.Topic]
		switch {
		case !ok:
			m.compileLocked(g, s, nil)
			g.subs[s.Topic] = s
			m.addTopicLocked(s.Topic, g.name)
			changed = true
			m.log.Info("subscription added", "group", g.name, "topic", s.Topic, "expression", s.SubString)
		case s.SubVersion > old.SubVersion:
			if !s.sameFilter(old) {
				changed = true
				m.log.Info("subscription changed", "group", g.name, "topic", s.Topic, "old", old.SubString, "new", s.SubString)
			}
			m.compileLocked(g, s, old)
			g.subs[s.Topic] = s
		}
	}
	for topic := range g.subs {
		if _, ok := seen[topic]; !ok {
			delete(g.subs, topic)
			m.removeTopicLocked(topic, g.name)
			changed = true
			m.log.Info("subscription removed", "group", g.name, "topic", topic)
		}
	}
	return changed
}

// compileLocked compiles a subscription's filter as it is stored, and
// logs one that does not compile (ConsumerFilterManager.register).
func (m *Manager) compileLocked(g *consumerGroup, s, old *Subscription) {
	s.compile(old)
	if s.FilterErr != nil && (old == nil || old.FilterErr == nil || !s.sameFilter(old)) {
		m.log.Warn("a subscription's filter does not compile; its pulls are refused with FILTER_DATA_NOT_EXIST",
			"group", g.name, "topic", s.Topic, "type", s.ExpressionType, "expression", s.SubString, "err", s.FilterErr)
	}
}

func (m *Manager) addTopicLocked(topic, group string) {
	gs, ok := m.topics[topic]
	if !ok {
		gs = make(map[string]struct{})
		m.topics[topic] = gs
	}
	gs[group] = struct{}{}
}

func (m *Manager) removeTopicLocked(topic, group string) {
	if gs, ok := m.topics[topic]; ok {
		delete(gs, group)
		if len(gs) == 0 {
			delete(m.topics, topic)
		}
	}
}

func (m *Manager) connGroupsLocked(conn *remoting.Conn) *connGroups {
	cg, ok := m.conns[conn]
	if !ok {
		cg = &connGroups{consumers: make(map[string]struct{}), producers: make(map[string]struct{})}
		m.conns[conn] = cg
	}
	return cg
}

// registerProducerLocked adds or refreshes conn in a producer group
// (ProducerManager.registerProducer).
func (m *Manager) registerProducerLocked(conn *remoting.Conn, mb member, group string) {
	g, ok := m.producers[group]
	if !ok {
		g = make(map[*remoting.Conn]*member)
		m.producers[group] = g
	}
	if old, ok := g[conn]; ok {
		if old.clientID != mb.clientID && m.producerIDs[old.clientID] == conn {
			delete(m.producerIDs, old.clientID)
		}
		*old = mb
	} else {
		nm := mb
		g[conn] = &nm
		m.connGroupsLocked(conn).producers[group] = struct{}{}
		m.log.Info("producer joined", "group", group, "client", mb.clientID, "conn", conn)
	}
	m.producerIDs[mb.clientID] = conn
}

// Unregister removes the client on conn from a producer group and a
// consumer group; "" skips either (UNREGISTER_CLIENT). The remaining
// members of the consumer group are notified. Members are found by
// connection, as RocketMQ does; clientID is for the log only. The Go client
// never unregisters: it just closes its connection (ConnClosed).
func (m *Manager) Unregister(conn *remoting.Conn, clientID, producerGroup, consumerGroup string) {
	var notices []notice
	m.mu.Lock()
	if producerGroup != "" && m.unregisterProducerLocked(conn, producerGroup) {
		m.log.Info("producer unregistered", "group", producerGroup, "client", clientID, "conn", conn)
	}
	if consumerGroup != "" {
		if n, ok := m.unregisterConsumerLocked(conn, consumerGroup); ok {
			m.log.Info("consumer unregistered", "group", consumerGroup, "client", clientID, "conn", conn)
			notices = appendNotice(notices, n)
		}
	}
	m.dropConnIfEmptyLocked(conn)
	m.mu.Unlock()
	m.notifyAll(notices)
}

// ConnClosed removes the client on conn from all its groups at once
// (ClientHousekeepingService.onChannelClose) and notifies the remaining
// members of its consumer groups. Register makes it a close listener of the
// server.
func (m *Manager) ConnClosed(conn *remoting.Conn) {
	var notices []notice
	m.mu.Lock()
	if cg, ok := m.conns[conn]; ok {
		for group := range cg.consumers {
			if n, ok := m.unregisterConsumerLocked(conn, group); ok {
				m.log.Info("consumer left: connection closed", "group", group, "conn", conn, "members", len(n.conns))
				notices = appendNotice(notices, n)
			}
		}
		for group := range cg.producers {
			if m.unregisterProducerLocked(conn, group) {
				m.log.Info("producer left: connection closed", "group", group, "conn", conn)
			}
		}
		delete(m.conns, conn)
	}
	m.mu.Unlock()
	m.notifyAll(notices)
}

// ScanNotActive drops every group membership not refreshed by a heartbeat
// for longer than ChannelExpiredTimeout (scanNotActiveChannel of
// ConsumerManager and ProducerManager), notifies the remaining members of
// the consumer groups concerned, and closes the connections left in no
// group. The scan goroutine calls it every ScanInterval.
func (m *Manager) ScanNotActive() {
	now := m.opts.Now()
	timeout := m.opts.ChannelExpiredTimeout
	var notices []notice
	var expired []*remoting.Conn

	m.mu.Lock()
	changed := make(map[string]struct{})
	for name, g := range m.consumers {
		for conn, mb := range g.members {
			if now.Sub(mb.lastUpdate) <= timeout {
				continue
			}
			m.log.Warn("consumer expired: no heartbeat", "group", name, "client", mb.clientID, "conn", conn, "last", mb.lastUpdate)
			m.unregisterConsumerLocked(conn, name)
			changed[name] = struct{}{}
			expired = append(expired, conn)
		}
	}
	for name := range changed {
		// Once per group, to the members left after the whole scan.
		if g, ok := m.consumers[name]; ok && g.notify && g.messageModel != Broadcasting {
			notices = append(notices, notice{name, connsOf(g.members)})
		}
	}
	for name, g := range m.producers {
		for conn, mb := range g {
			if now.Sub(mb.lastUpdate) <= timeout {
				continue
			}
			m.log.Warn("producer expired: no heartbeat", "group", name, "client", mb.clientID, "conn", conn, "last", mb.lastUpdate)
			m.unregisterProducerLocked(conn, name)
			expired = append(expired, conn)
		}
	}
	var toClose []*remoting.Conn
	for _, conn := range expired {
		if m.dropConnIfEmptyLocked(conn) {
			toClose = append(toClose, conn)
		}
	}
	m.mu.Unlock()

	// Notices first: remaining members learn at once, whatever closing does.
	m.notifyAll(notices)
	for _, conn := range toClose {
		conn.Close()
	}
}

// unregisterConsumerLocked removes conn from a consumer group, and the
// group when it is left empty. It returns the members to notify, and false
// when conn was not a member. The notice has no connections when nobody is
// to be notified.
func (m *Manager) unregisterConsumerLocked(conn *remoting.Conn, group string) (notice, bool) {
	g, ok := m.consumers[group]
	if !ok {
		return notice{}, false
	}
	if _, ok := g.members[conn]; !ok {
		return notice{}, false
	}
	delete(g.members, conn)
	if cg, ok := m.conns[conn]; ok {
		delete(cg.consumers, group)
	}
	if len(g.members) == 0 {
		delete(m.consumers, group)
		for topic := range g.subs {
			m.removeTopicLocked(topic, group)
		}
		m.log.Info("consumer group gone: no member left", "group", group)
		return notice{group: group}, true
	}
	if !g.notify || g.messageModel == Broadcasting {
		return notice{group: group}, true
	}
	return notice{group: group, conns: connsOf(g.members)}, true
}

// unregisterProducerLocked removes conn from a producer group, and the
// group when it is left empty; false when conn was not a member.
func (m *Manager) unregisterProducerLocked(conn *remoting.Conn, group string) bool {
	g, ok := m.producers[group]
	if !ok {
		return false
	}
	mb, ok := g[conn]
	if !ok {
		return false
	}
	delete(g, conn)
	if len(g) == 0 {
		delete(m.producers, group)
	}
	if m.producerIDs[mb.clientID] == conn && !m.stillProducerLocked(conn, mb.clientID) {
		delete(m.producerIDs, mb.clientID)
	}
	if cg, ok := m.conns[conn]; ok {
		delete(cg.producers, group)
	}
	return true
}

// stillProducerLocked reports whether conn is a member of some producer
// group as clientID.
func (m *Manager) stillProducerLocked(conn *remoting.Conn, clientID string) bool {
	cg, ok := m.conns[conn]
	if !ok {
		return false
	}
	for group := range cg.producers {
		if mb, ok := m.producers[group][conn]; ok && mb.clientID == clientID {
			return true
		}
	}
	return false
}

// dropConnIfEmptyLocked forgets conn when it is in no group and reports
// whether it did.
func (m *Manager) dropConnIfEmptyLocked(conn *remoting.Conn) bool {
	if cg, ok := m.conns[conn]; ok && cg.empty() {
		delete(m.conns, conn)
		return true
	}
	return false
}

func connsOf(ms map[*remoting.Conn]*member) []*remoting.Conn {
	out := make([]*remoting.Conn, 0, len(ms))
	for c := range ms {
		out = append(out, c)
	}
	return out
}

func appendNotice(ns []notice, n notice) []notice {
	if len(n.conns) == 0 {
		return ns
	}
	return append(ns, n)
}
