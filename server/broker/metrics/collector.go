package metrics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values RocketMQ's exporter writes.
const (
	protocolRemoting = "remoting" // protocol_type of remoting clients
	storageType      = "local"    // storage_type
	storageMedium    = "disk"     // storage_medium
)

// collector turns a Source's snapshot into metrics at each scrape.
type collector struct {
	src   Source
	limit int // of per-queue series; negative: none

	messagesIn, throughputIn, messageSize    *prometheus.Desc
	messagesOut, throughputOut               *prometheus.Desc
	lagMessages, lagLatency, queueLag        *prometheus.Desc
	producerConns, consumerConns             *prometheus.Desc
	topicNumber, groupNumber, permission     *prometheus.Desc
	storageSize, flushBehind, dispatchBehind *prometheus.Desc
	reserveTime, clDiskRatio, cqDiskRatio    *prometheus.Desc
	clMinOffset, clMaxOffset, heldPulls      *prometheus.Desc
	putLatency, flushLatency                 *prometheus.Desc
	queueSeriesOmitted, lagSeriesOmitted     *prometheus.Desc
}

// NewCollector returns a prometheus.Collector of the broker metrics the
// package doc lists, read from src at each scrape, with at most
// queueSeriesLimit per-queue series (see Options.QueueSeriesLimit).
func NewCollector(src Source, queueSeriesLimit int) prometheus.Collector {
	if queueSeriesLimit == 0 {
		queueSeriesLimit = DefaultQueueSeriesLimit
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	in := []string{"topic", "message_type", "is_system"}
	out := []string{"topic", "consumer_group", "is_system"}
	lag := []string{"consumer_group", "topic", "is_retry", "is_system"}
	st := []string{"storage_type", "storage_medium"}
	return &collector{
		src:            src,
		limit:          queueSeriesLimit,
		messagesIn:     d("rocketmq_messages_in_total", "Total number of incoming messages", in...),
		throughputIn:   d("rocketmq_throughput_in_total", "Total traffic of incoming messages", in...),
		messageSize:    d("rocketmq_message_size", "Incoming messages size", in...),
		messagesOut:    d("rocketmq_messages_out_total", "Total number of outgoing messages", out...),
		throughputOut:  d("rocketmq_throughput_out_total", "Total traffic of outgoing messages", out...),
		lagMessages:    d("rocketmq_consumer_lag_messages", "Consumer lag messages", lag...),
		lagLatency:     d("rocketmq_consumer_lag_latency_milliseconds", "Consumer lag time", lag...),
		queueLag:       d("rocketstore_consumer_queue_lag_messages", "Consumer lag messages in one queue", "consumer_group", "topic", "queue_id"),
		producerConns:  d("rocketmq_producer_connections", "Producer connections", "language", "version", "protocol_type"),
		consumerConns:  d("rocketmq_consumer_connections", "Consumer connections", "consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"),
		topicNumber:    d("rocketmq_topic_number", "Active topic number"),
		groupNumber:    d("rocketmq_consumer_group_number", "Active subscription group number"),
		permission:     d("rocketmq_broker_permission", "Broker permission"),
		storageSize:    d("rocketmq_storage_size_bytes", "Broker storage size", st...),
		flushBehind:    d("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes", st...),
		dispatchBehind: d("rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes", st...),
		reserveTime:    d("rocketmq_storage_message_reserve_time_milliseconds", "Broker message reserve time", st...),
		clDiskRatio:    d("rocketstore_commitlog_disk_ratio", "Used fraction of the filesystem holding the CommitLog"),
		cqDiskRatio:    d("rocketstore_consumequeue_disk_ratio", "Used fraction of the filesystem holding the ConsumeQueues"),
		clMinOffset:    d("rocketstore_commitlog_min_offset_bytes", "Smallest CommitLog offset still stored"),
		clMaxOffset:    d("rocketstore_commitlog_max_offset_bytes", "CommitLog write position"),
		heldPulls:      d("rocketstore_pull_requests_held", "Pull requests held by long polling"),
		putLatency:     d("rocketstore_put_latency_seconds", "Time the store took to put a sent message or batch, flush wait included"),
		flushLatency:   d("rocketstore_flush_latency_seconds", "Time of the CommitLog flushes that wrote something out"),
		queueSeriesOmitted: d("rocketstore_consumer_queue_lag_series_omitted",
			"Per-queue lag series left out of this scrape by metricsQueueSeriesLimit (the queues with the least lag)"),
		lagSeriesOmitted: d("rocketstore_consumer_lag_series_omitted",
			"Group and topic pairs whose lag series were left out of this scrape by metricsQueueSeriesLimit (those with the least lag)"),
	}
}

// Describe sends every metric's description.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messagesIn, c.throughputIn, c.messageSize, c.messagesOut, c.throughputOut,
		c.lagMessages, c.lagLatency, c.queueLag, c.producerConns, c.consumerConns, c.topicNumber, c.groupNumber,
		c.permission, c.storageSize, c.flushBehind, c.dispatchBehind, c.reserveTime, c.clDiskRatio, c.cqDiskRatio,
		c.clMinOffset, c.clMaxOffset, c.heldPulls, c.putLatency, c.flushLatency, c.queueSeriesOmitted, c.lagSeriesOmitted} {
		ch <- d
	}
}

// Collect takes a snapshot and sends its metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	if s == nil {
		return // not open yet
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, t := range s.TopicsIn {
		l := []string{t.Topic, t.MessageType, strconv.FormatBool(t.IsSystem)}
		counter(c.messagesIn, t.Messages, l...)
		counter(c.throughputIn, t.Bytes, l...)
		histogram(ch, c.messageSize, t.Sizes, l...)
	}
	for _, g := range s.GroupsOut {
		l := []string{g.Topic, g.Group, strconv.FormatBool(g.IsSystem)}
		counter(c.messagesOut, g.Messages, l...)
		counter(c.throughputOut, g.Bytes, l...)
	}
	c.collectLags(ch, s)
	for _, p := range s.Producers {
		gauge(c.producerConns, float64(p.Count), p.Language, p.Version, protocolRemoting)
	}
	for _, g := range s.Consumers {
		gauge(c.consumerConns, float64(g.Count), g.Group, g.Language, g.Version, g.ConsumeMode, protocolRemoting,
			strconv.FormatBool(g.IsSystem))
	}
	gauge(c.topicNumber, float64(s.TopicNumber))
	gauge(c.groupNumber, float64(s.ConsumerGroupNumber))
	gauge(c.permission, float64(s.BrokerPermission))

	st := s.Store
	gauge(c.storageSize, float64(st.UsedBytes), storageType, storageMedium)
	gauge(c.flushBehind, float64(st.FlushBehindBytes), storageType, storageMedium)
	gauge(c.dispatchBehind, float64(st.DispatchBehindBytes), storageType, storageMedium)
	if st.EarliestMessageTime > 0 { // as RocketMQ: nothing while the store is empty
		gauge(c.reserveTime, float64(s.Time.UnixMilli()-st.EarliestMessageTime), storageType, storageMedium)
	}
	gauge(c.clDiskRatio, st.CommitLogDiskRatio)
	gauge(c.cqDiskRatio, st.ConsumeQueueDiskRatio)
	gauge(c.clMinOffset, float64(st.CommitLogMinOffset))
	gauge(c.clMaxOffset, float64(st.CommitLogMaxOffset))
	gauge(c.heldPulls, float64(s.HeldPulls))
	histogram(ch, c.putLatency, s.PutLatency)
	histogram(ch, c.flushLatency, s.FlushLatency)
}

// collectLags sends the per-queue lags and their sums per group and topic
// (ConsumerLagCalculator: the lag summed, the latency of the oldest
// unconsumed message of any queue).
func (c *collector) collectLags(ch chan<- prometheus.Metric, s *Snapshot) {
	type key struct {
		group, topic      string
		isRetry, isSystem bool
	}
	type sum struct {
		lag, earliest int64
	}
	perQueue := s.Lags
	if c.limit >= 0 && len(perQueue) > c.limit {
		// The cardinality guard: the queues with the largest lag.
		perQueue = slices.Clone(perQueue)
		slices.SortStableFunc(perQueue, func(a, b QueueLag) int { return cmp.Compare(b.Lag, a.Lag) })
		perQueue = perQueue[:c.limit]
	}
	for _, q := range perQueue {
		ch <- prometheus.MustNewConstMetric(c.queueLag, prometheus.GaugeValue, float64(q.Lag),
			q.Group, q.Topic, strconv.Itoa(int(q.QueueID)))
	}
	ch <- prometheus.MustNewConstMetric(c.queueSeriesOmitted, prometheus.GaugeValue, float64(len(s.Lags)-len(perQueue)))
	sums := map[key]*sum{}
	var order []key
	for _, q := range s.Lags {
		k := key{q.Group, q.Topic, q.IsRetry, q.IsSystem}
		t := sums[k]
		if t == nil {
			t = &sum{}
			sums[k] = t
			order = append(order, k)
		}
		t.lag += q.Lag
		if q.EarliestUnconsumed > 0 && (t.earliest == 0 || q.EarliestUnconsumed < t.earliest) {
			t.earliest = q.EarliestUnconsumed
		}
	}
	all := len(order)
	if c.limit >= 0 && all > c.limit {
		slices.SortStableFunc(order, func(a, b key) int { return cmp.Compare(sums[b].lag, sums[a].lag) })
		order = order[:c.limit]
	}
	ch <- prometheus.MustNewConstMetric(c.lagSeriesOmitted, prometheus.GaugeValue, float64(all-len(order)))
	for _, k := range order {
		t := sums[k]
		l := []string{k.group, k.topic, strconv.FormatBool(k.isRetry), strconv.FormatBool(k.isSystem)}
		ch <- prometheus.MustNewConstMetric(c.lagMessages, prometheus.GaugeValue, float64(t.lag), l...)
		var latency int64
		if t.earliest > 0 {
			latency = max(s.Time.UnixMilli()-t.earliest, 0)
		}
		ch <- prometheus.MustNewConstMetric(c.lagLatency, prometheus.GaugeValue, float64(latency), l...)
	}
}

// histogram sends h as a Prometheus histogram (cumulative buckets).
func histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h Histogram, labels ...string) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[b] = cum
	}
	for i := len(h.Bounds); i < len(h.Counts); i++ {
		cum += h.Counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(d, cum, h.Sum, buckets, labels...)
}
