package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/broker/metrics"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/store"
)

// Broker life phases, as /healthz reports them.
const (
	phaseOpening  int32 = iota // opening the store and the config files
	phaseStarting              // open; the client port is not served yet
	phaseServing
	phaseStopping
)

// readiness is what /healthz answers: the broker's phase and the outcome
// of its last registration with the name servers.
type readiness struct {
	phase      atomic.Int32
	registered atomic.Pointer[string] // nil before the first round; "" registered; else why not
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// validateMetrics checks the metrics options.
func (o Options) validateMetrics() []error {
	var errs []error
	switch o.MetricsExporterType {
	case "", "DISABLE", "PROM":
	default:
		errs = append(errs, fmt.Errorf("MetricsExporterType %q: want PROM or DISABLE (OTLP_GRPC and LOG are not offered)", o.MetricsExporterType))
	}
	if p := o.MetricsPromExporterPort; p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("MetricsPromExporterPort %d is not a port", p))
	}
	if _, err := metricsLabels(o); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// metricsLabels are the labels on every metric: those of MetricsLabel,
// then RocketMQ's cluster, node_type and node_id (which win, as in
// BrokerMetricsManager).
func metricsLabels(o Options) (map[string]string, error) {
	m := map[string]string{}
	for kv := range strings.SplitSeq(o.MetricsLabel, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, ":")
		if !ok || !labelName.MatchString(k) || strings.Contains(v, ":") {
			return nil, fmt.Errorf("MetricsLabel %q: %q is not label:value", o.MetricsLabel, kv)
		}
		m[k] = v
	}
	m["cluster"], m["node_type"], m["node_id"] = o.ClusterName, "broker", o.BrokerName
	return m, nil
}

// startMetrics starts the metrics server when MetricsExporterType is PROM.
// It runs from before the store opens, so /healthz can say the broker is
// not ready yet, to Shutdown.
func (b *Broker) startMetrics() error {
	if b.opts.MetricsExporterType != "PROM" {
		return nil
	}
	host := b.opts.MetricsPromExporterHost
	if host == "" {
		host = b.opts.BrokerIP1
	}
	labels, err := metricsLabels(b.opts)
	if err != nil {
		return err
	}
	b.metrics, err = metrics.Start(metrics.Options{
		Addr:   net.JoinHostPort(host, strconv.Itoa(b.opts.MetricsPromExporterPort)),
		Labels: labels,
		Source: metrics.SourceFunc(b.metricsSnapshot),
		Health: b.health,
		Logger: b.log.With("component", "metrics"),
		Mount:  b.opts.HTTPHandlers,

		QueueSeriesLimit: b.opts.MetricsQueueSeriesLimit,
	})
	if err != nil {
		return err
	}
	b.log.Info("serving metrics", "addr", b.metrics.Addr(), "paths", "/metrics /healthz /debug/pprof/")
	return nil
}

// stopMetrics stops the metrics server, waiting for scrapes in flight
// (bounded by ctx): after it, nothing reads the store for metrics.
func (b *Broker) stopMetrics(ctx context.Context) error {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.Shutdown(ctx)
}

// MetricsAddr is the address of the metrics server, "" when it is off.
func (b *Broker) MetricsAddr() string {
	if b.metrics == nil {
		return ""
	}
	return b.metrics.Addr().String()
}

// health is nil when the broker can serve: the store open, the client
// port served, registered with a name server (if it has any); else why not.
func (b *Broker) health() error {
	switch b.ready.phase.Load() {
	case phaseOpening:
		return errors.New("opening the store")
	case phaseStarting:
		return errors.New("the client port is not served yet")
	case phaseStopping:
		return errors.New("shutting down")
	}
	if len(b.opts.NamesrvAddrs) == 0 {
		return nil
	}
	r := b.ready.registered.Load()
	switch {
	case r == nil:
		return fmt.Errorf("not registered with the name server %s yet", strings.Join(b.opts.NamesrvAddrs, ";"))
	case *r != "":
		return errors.New(*r)
	}
	return nil
}

// noteRegistration records a round of registrations: registered with at
// least one name server is enough for clients to find the broker.
func (b *Broker) noteRegistration(ok int, errs []error) {
	why := ""
	if ok == 0 {
		why = fmt.Sprintf("not registered with any name server: %v", errors.Join(errs...))
	}
	b.ready.registered.Store(&why)
}

// metricsSnapshot reads the broker's figures for a scrape; nil until the
// store is open.
func (b *Broker) metricsSnapshot() *metrics.Snapshot {
	if b.ready.phase.Load() == phaseOpening {
		return nil
	}
	s := &metrics.Snapshot{Time: time.Now(), HeldPulls: b.hold.count.Load()}
	b.stats.in.each(func(topic string, typ msgType, msgs, bytes int64, sizes []int64) {
		if isRetryOrDLQ(topic) {
			return // as RocketMQ
		}
		h := metrics.Histogram{Bounds: make([]float64, len(messageSizeBounds)), Counts: make([]uint64, len(sizes)), Sum: float64(bytes)}
		for i, v := range messageSizeBounds {
			h.Bounds[i] = float64(v)
		}
		for i, v := range sizes {
			h.Counts[i] = uint64(v)
		}
		s.TopicsIn = append(s.TopicsIn, metrics.TopicIn{Topic: topic, MessageType: msgTypeNames[typ],
			IsSystem: isSystemTopic(topic, b.opts), Messages: msgs, Bytes: bytes, Sizes: h})
	})
	b.stats.groupsMu.RLock()
	for k, g := range b.stats.groups {
		if !isRetryOrDLQ(k.topic) {
			s.GroupsOut = append(s.GroupsOut, metrics.GroupOut{Topic: k.topic, Group: k.group,
				IsSystem: isSystemTopic(k.topic, b.opts) || isSystemGroup(k.group),
				Messages: g.got.Load(), Bytes: g.gotBytes.Load()})
		}
	}
	b.stats.groupsMu.RUnlock()
	s.Lags = b.lags()

	producers, consumers := b.clients.ConnectionCounts()
	for _, c := range producers { // by language and version, all groups together (ProducerAttr)
		s.Producers = addProducers(s.Producers, metrics.ProducerConnections{Language: strings.ToLower(c.Language),
			Version: strings.ToLower(versionDesc(c.Version)), Count: c.Count})
	}
	for _, c := range consumers {
		s.Consumers = append(s.Consumers, metrics.ConsumerConnections{Group: c.Group,
			Language: strings.ToLower(c.Language), Version: strings.ToLower(versionDesc(c.Version)),
			ConsumeMode: consumeMode(c.ConsumeType), IsSystem: isSystemGroup(c.Group), Count: c.Count})
	}

	s.TopicNumber = b.topics.Len()
	s.ConsumerGroupNumber = b.groups.Len()
	s.BrokerPermission, _ = strconv.Atoi(b.config.get("brokerPermission"))

	st := b.store
	s.Store = metrics.StoreFigures{
		FlushBehindBytes:      st.FlushBehindBytes(),
		DispatchBehindBytes:   st.DispatchBehindBytes(),
		CommitLogDiskRatio:    st.CommitLogDiskRatio(),
		ConsumeQueueDiskRatio: st.ConsumeQueueDiskRatio(),
		CommitLogMinOffset:    st.MinPhyOffset(),
		CommitLogMaxOffset:    st.MaxPhyOffset(),
	}
	if t, err := st.GetStoreEarliestMessageTime(); err == nil && t > 0 {
		s.Store.EarliestMessageTime = t
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(b.opts.StoreDir, &fs) == nil {
		s.Store.UsedBytes = int64(fs.Blocks-fs.Bfree) * fs.Bsize
	}
	s.PutLatency = secondsHistogram(b.stats.putLatency.Snapshot())
	s.FlushLatency = secondsHistogram(st.FlushLatency())
	return s
}

// lags is ConsumerLagCalculator's per-queue lag for every group with
// offsets or online subscriptions: the queue's max offset less the group's
// committed offset, in each write queue of the topic; none where nothing
// is committed. Retry topics are left out, as RocketMQ does.
func (b *Broker) lags() []metrics.QueueLag {
	type key struct{ group, topic string }
	committed := map[key]map[int32]int64{}
	var order []key
	for _, g := range b.offsets.All() {
		k := key{g.Group, g.Topic}
		committed[k] = g.Offsets
		order = append(order, k)
	}
	for _, group := range b.clients.ConsumerGroups() {
		gi, _ := b.clients.Group(group)
		for _, sub := range gi.Subscriptions {
			if k := (key{group, sub.Topic}); committed[k] == nil {
				committed[k] = map[int32]int64{}
				order = append(order, k)
			}
		}
	}
	brokerPerm, _ := strconv.Atoi(b.config.get("brokerPermission"))
	var out []metrics.QueueLag
	for _, k := range order {
		if strings.HasPrefix(k.topic, message.RetryTopicPrefix) {
			continue
		}
		cfg, ok := b.topics.Get(k.topic)
		if !ok || cfg.Perm&brokerPerm&(protocol.PermRead|protocol.PermWrite) == 0 {
			continue
		}
		offs := committed[k]
		for q := range int32(cfg.WriteQueueNums) {
			top := max(b.store.GetMaxOffsetInQueue(k.topic, q), 0)
			off, ok := offs[q]
			if !ok || off < 0 {
				off = top
			}
			l := metrics.QueueLag{Group: k.group, Topic: k.topic, QueueID: q,
				IsSystem: isSystemTopic(k.topic, b.opts) || isSystemGroup(k.group), Lag: max(top-off, 0)}
			if l.Lag > 0 {
				if ts := b.store.GetMessageStoreTimeStamp(k.topic, q, off); ts > 0 {
					l.EarliestUnconsumed = ts
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// addProducers adds p to the count of its language and version in ps.
func addProducers(ps []metrics.ProducerConnections, p metrics.ProducerConnections) []metrics.ProducerConnections {
	for i := range ps {
		if ps[i].Language == p.Language && ps[i].Version == p.Version {
			ps[i].Count += p.Count
			return ps
		}
	}
	return append(ps, p)
}

func secondsHistogram(l store.LatencySnapshot) metrics.Histogram {
	h := metrics.Histogram{Bounds: make([]float64, len(l.Bounds)), Counts: l.Counts, Sum: l.Sum.Seconds()}
	for i, d := range l.Bounds {
		h.Bounds[i] = d.Seconds()
	}
	return h
}

// isRetryOrDLQ is BrokerMetricsManager.isRetryOrDlqTopic.
func isRetryOrDLQ(topic string) bool {
	return strings.HasPrefix(topic, message.RetryTopicPrefix) || strings.HasPrefix(topic, message.DLQTopicPrefix)
}

// isSystemGroup is BrokerMetricsManager.isSystemGroup: CID_RMQ_SYS_ in
// any case.
func isSystemGroup(group string) bool {
	return len(group) >= len("CID_RMQ_SYS_") && strings.EqualFold(group[:len("CID_RMQ_SYS_")], "CID_RMQ_SYS_")
}

// consumeMode is ConsumeType.getTypeCN in lower case.
func consumeMode(ct clients.ConsumeType) string {
	switch ct {
	case clients.ConsumeActively:
		return "pull"
	case clients.ConsumePassively:
		return "push"
	}
	return strings.ToLower(strings.TrimPrefix(string(ct), "CONSUME_"))
}

// versionDesc is MQVersion.getVersionDesc for the versions clients of
// the last years send: from V3_9_1_SNAPSHOT (194) the enum runs
// SNAPSHOT, release for each major_minor_patch with minor and patch 0-9,
// and ends at V5_9_9. The 3.x versions before it, irregular, are given as
// V3_<ordinal>.
func versionDesc(v int) string {
	const first, last = 194, 611
	switch {
	case v < 0:
		return "V" + strconv.Itoa(v)
	case v < first:
		return "V3_" + strconv.Itoa(v)
	case v > last:
		v = last
	}
	g := v - first + 182 // index in the regular sequence from V3_0_0_SNAPSHOT
	desc := fmt.Sprintf("V%d_%d_%d", 3+g/200, g/20%10, g/2%10)
	if g%2 == 0 {
		desc += "_SNAPSHOT"
	}
	return desc
}
