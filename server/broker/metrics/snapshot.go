package metrics

import "time"

// Source gives the broker's figures at one scrape. Snapshot is called once
// per scrape, possibly from several goroutines at once.
type Source interface {
	Snapshot() *Snapshot
}

// SourceFunc adapts a function to Source.
type SourceFunc func() *Snapshot

// Snapshot calls f.
func (f SourceFunc) Snapshot() *Snapshot { return f() }

// Snapshot is the broker's state at one instant. A nil slice or zero
// field is reported as nothing (slices) or 0 (figures).
type Snapshot struct {
	// Time is when the snapshot was taken; lag latencies are measured to it.
	Time time.Time

	TopicsIn  []TopicIn
	GroupsOut []GroupOut
	Lags      []QueueLag

	Producers []ProducerConnections
	Consumers []ConsumerConnections

	TopicNumber         int // topics the broker has (rocketmq_topic_number)
	ConsumerGroupNumber int // subscription groups (rocketmq_consumer_group_number)
	BrokerPermission    int // 2 write, 4 read, 6 both

	HeldPulls int64 // pull requests held by long polling
	Store     StoreFigures

	PutLatency, FlushLatency Histogram // in seconds
}

// TopicIn is what was put into one topic, of one message type.
type TopicIn struct {
	Topic       string
	MessageType string // normal, fifo, delay or transaction (TopicMessageType)
	IsSystem    bool
	Messages    int64
	Bytes       int64
	Sizes       Histogram // of the stored records, in bytes
}

// GroupOut is what one consumer group pulled from one topic.
type GroupOut struct {
	Topic, Group string
	IsSystem     bool
	Messages     int64
	Bytes        int64
}

// QueueLag is a consumer group's lag in one queue.
type QueueLag struct {
	Group, Topic string
	QueueID      int32
	IsRetry      bool
	IsSystem     bool
	// Lag is the broker's max offset less the group's committed offset.
	Lag int64
	// EarliestUnconsumed is the store time (unix ms) of the first message
	// the group has not consumed, 0 when it has consumed everything.
	EarliestUnconsumed int64
}

// ProducerConnections counts the producer connections of one client kind.
type ProducerConnections struct {
	Language, Version string // lower case: "go", "v4_5_2"
	Count             int
}

// ConsumerConnections counts one consumer group's connections of one
// client kind.
type ConsumerConnections struct {
	Group             string
	Language, Version string
	ConsumeMode       string // push, pull or pop
	IsSystem          bool
	Count             int
}

// StoreFigures are the message store's gauges.
type StoreFigures struct {
	UsedBytes             int64   // of the filesystem holding the store
	FlushBehindBytes      int64   // CommitLog bytes written, not yet flushed
	DispatchBehindBytes   int64   // CommitLog bytes not yet in their ConsumeQueues
	EarliestMessageTime   int64   // unix ms of the oldest stored message, 0 if none
	CommitLogDiskRatio    float64 // used fraction of the CommitLog's filesystem, -1 unknown
	ConsumeQueueDiskRatio float64
	CommitLogMinOffset    int64
	CommitLogMaxOffset    int64
}

// Histogram is a histogram at one instant: Counts[i] observations fell in
// (Bounds[i-1], Bounds[i]], the last entry of Counts (one more than
// Bounds) above the last bound. Counts are per bucket, not cumulative.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	Sum    float64
}
