package meta

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// DefaultOffsetPersistInterval is how often StartPersist writes
// consumerOffset.json by default (BrokerConfig.flushConsumerOffsetInterval).
const DefaultOffsetPersistInterval = 5 * time.Second

// topicGroupSeparator joins topic and group in the keys of the offset
// table: "topic@group".
const topicGroupSeparator = "@"

// Offsets is RocketMQ's ConsumerOffsetManager: the committed consume
// offset of each consumer group in each queue, kept in consumerOffset.json.
// Commits change memory only; the file is written by Persist, by the
// background persister of StartPersist, and by Close. An Offsets is safe
// for concurrent use.
type Offsets struct {
	log  *slog.Logger
	file configFile

	// dirty is set by a change of the table and cleared by the
	// background persister before it writes: no change, no write.
	dirty atomic.Bool

	mu      sync.RWMutex // guards table (the map; each entry has its own lock), version
	table   map[topicGroup]*queueOffsets
	version protocol.DataVersion // up at each persist (ConsumerOffsetManager.dataVersion)

	ownMu sync.Mutex                     // guards own
	own   map[topicGroup]map[int32]int64 // a slave's commits not yet on its master; see replica.go

	life    sync.Mutex // guards started and the change of closed
	started bool
	closed  atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

type topicGroup struct{ topic, group string }

func (k topicGroup) String() string { return k.topic + topicGroupSeparator + k.group }

// queueOffsets are the offsets of one topic@group by queue id.
type queueOffsets struct {
	mu      sync.Mutex // guards offs, removed
	offs    map[int32]int64
	removed bool // taken out of the table: commits must go to a new entry
}

// OpenOffsets loads the offsets from path ({storeRoot}/config/
// consumerOffset.json), with bare or quoted queue ids. A missing file is an
// empty one; an unreadable one falls back to its .bak (logged), and fails
// with ErrCorrupt if that is unreadable too. logger nil: discard.
func OpenOffsets(path string, logger *slog.Logger) (*Offsets, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := &Offsets{
		log:     logger,
		file:    configFile{path: path, log: logger},
		table:   make(map[topicGroup]*queueOffsets, 64),
		version: protocol.DataVersion{Timestamp: time.Now().UnixMilli()},
		stop:    make(chan struct{}),
	}
	if err := o.file.load(o.decode); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *Offsets) decode(data []byte) error {
	var f struct {
		OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	}
	if err := fastjson.Unmarshal(data, &f); err != nil {
		return err
	}
	table := make(map[topicGroup]*queueOffsets, len(f.OffsetTable))
	for key, offs := range f.OffsetTable {
		topic, group, ok := strings.Cut(key, topicGroupSeparator)
		if !ok {
			o.log.Warn("dropping an offset table entry whose key is not topic@group", "key", key)
			continue
		}
		if offs == nil {
			offs = map[int32]int64{}
		}
		table[topicGroup{topic, group}] = &queueOffsets{offs: offs}
	}
	o.mu.Lock()
	o.table = table
	o.mu.Unlock()
	return nil
}

// Commit records offset as the consume offset of group in queue queueID
// of topic (commitOffset). It allocates only for a topic@group or queue it
// has not seen.
func (o *Offsets) Commit(group, topic string, queueID int32, offset int64) {
	o.commit(group, topic, queueID, offset, false)
}

// commit is Commit; forward leaves a queue whose offset is at or past
// offset as it is. It reports whether it committed.
func (o *Offsets) commit(group, topic string, queueID int32, offset int64, forward bool) bool {
	k := topicGroup{topic, group}
	for {
		o.mu.RLock()
		q := o.table[k]
		o.mu.RUnlock()
		if q == nil {
			o.mu.Lock()
			if q = o.table[k]; q == nil {
				q = &queueOffsets{offs: make(map[int32]int64, 8)}
				o.table[k] = q
			}
			o.mu.Unlock()
		}
		q.mu.Lock()
		if !q.removed {
			if cur, ok := q.offs[queueID]; forward && ok && cur >= offset {
				q.mu.Unlock()
				return false
			}
			q.offs[queueID] = offset
			q.mu.Unlock()
			if !o.dirty.Load() {
				o.dirty.Store(true)
			}
			return true
		}
		q.mu.Unlock() // RemoveGroup took it out meanwhile: start again
	}
}

// Query returns the committed offset of group in queue queueID of topic
// (queryOffset), and false if there is none (where RocketMQ says -1).
func (o *Offsets) Query(group, topic string, queueID int32) (int64, bool) {
	o.mu.RLock()
	q := o.table[topicGroup{topic, group}]
	o.mu.RUnlock()
	if q == nil {
		return 0, false
	}
	q.mu.Lock()
	off, ok := q.offs[queueID]
	q.mu.Unlock()
	return off, ok
}

// Table returns a copy of the offsets of group in topic by queue id, nil
// if there are none (queryOffset(group, topic)).
func (o *Offsets) Table(group, topic string) map[int32]int64 {
	o.mu.RLock()
	q := o.table[topicGroup{topic, group}]
	o.mu.RUnlock()
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return maps.Clone(q.offs)
}

// GroupsOfTopic returns the groups with offsets in topic, sorted
// (whichGroupByTopic).
func (o *Offsets) GroupsOfTopic(topic string) []string {
	return o.collect(func(k topicGroup) (string, bool) { return k.group, k.topic == topic })
}

// TopicsOfGroup returns the topics in which group has offsets, sorted
// (whichTopicByConsumer).
func (o *Offsets) TopicsOfGroup(group string) []string {
	return o.collect(func(k topicGroup) (string, bool) { return k.topic, k.group == group })
}

func (o *Offsets) collect(pick func(topicGroup) (string, bool)) []string {
	o.mu.RLock()
	var out []string
	for k := range o.table {
		if s, ok := pick(k); ok {
			out = append(out, s)
		}
	}
	o.mu.RUnlock()
	slices.Sort(out)
	return out
}

// RemoveGroup forgets the offsets of group in every topic (removeOffset,
// on DELETE_SUBSCRIPTIONGROUP with cleanOffset). The file changes at the
// next persist.
func (o *Offsets) RemoveGroup(group string) {
	o.remove(func(k topicGroup) bool { return k.group == group })
}

// RemoveTopic forgets the offsets of every group in topic
// (cleanOffsetByTopic, on DELETE_TOPIC_IN_BROKER). The file changes at the
// next persist.
func (o *Offsets) RemoveTopic(topic string) {
	o.remove(func(k topicGroup) bool { return k.topic == topic })
}

func (o *Offsets) remove(match func(topicGroup) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, q := range o.table {
		if match(k) {
			delete(o.table, k)
			o.dirty.Store(true)
			q.mu.Lock()
			q.removed = true
			q.mu.Unlock()
			o.log.Info("removed consumer offsets", "key", k.String())
		}
	}
}

// StartPersist starts writing consumerOffset.json every interval (<= 0:
// DefaultOffsetPersistInterval) until Close, when something changed since
// the last write. Calls after the first, or
// after Close, do nothing.
func (o *Offsets) StartPersist(interval time.Duration) {
	if interval <= 0 {
		interval = DefaultOffsetPersistInterval
	}
	o.life.Lock()
	defer o.life.Unlock()
	if o.started || o.closed.Load() {
		return
	}
	o.started = true
	o.wg.Go(func() { o.persistLoop(interval) })
}

func (o *Offsets) persistLoop(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
			if !o.dirty.Swap(false) {
				continue // nothing committed since the last write
			}
			if err := o.persist(); err != nil {
				o.dirty.Store(true)
				o.log.Error("persisting consumer offsets failed", "err", err)
			}
		}
	}
}

// Persist writes consumerOffset.json now: the previous file becomes the
// .bak, the new one is written to a temp file, fsynced and renamed, and the
// folder fsynced. After Close it returns ErrClosed.
func (o *Offsets) Persist() error {
	if o.closed.Load() {
		return fmt.Errorf("meta: persist offsets: %w", ErrClosed)
	}
	return o.persist()
}

func (o *Offsets) persist() error {
	o.mu.Lock()
	nextVersion(&o.version)
	o.mu.Unlock()
	return o.file.save(o.encode)
}

// encode writes the table as a Java broker writes consumerOffset.json:
//
//	{
//		"offsetTable":{
//			"TopicTest@cg":{0:123,1:456
//			}
//		}
//	}
func (o *Offsets) encode() []byte { return o.encodeWith(true, false) }

// encodeWith writes the table, pretty (the file) or compact, with the
// data version or without (the file, as this package has always written it).
func (o *Offsets) encodeWith(pretty, version bool) []byte {
	type entry struct {
		key string
		q   *queueOffsets
	}
	o.mu.RLock()
	entries := make([]entry, 0, len(o.table))
	for k, q := range o.table {
		entries = append(entries, entry{k.String(), q})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	w := fastjson.NewWriter(make([]byte, 0, 64+64*len(entries)), pretty)
	w.BeginObject()
	if version {
		w.Key("dataVersion")
		writeDataVersion(w, o.version)
	}
	w.Key("offsetTable")
	w.BeginObject()
	for _, e := range entries {
		q := e.q
		q.mu.Lock()
		ids := slices.Sorted(maps.Keys(q.offs))
		w.Key(e.key)
		w.BeginIntMap()
		for _, id := range ids {
			w.IntKey(int64(id))
			w.Int(q.offs[id])
		}
		w.End()
		q.mu.Unlock()
	}
	o.mu.RUnlock()
	w.End()
	w.End()
	return w.Bytes()
}

// Close stops the background persister and writes consumerOffset.json a
// last time. Calls after the first return ErrClosed. Commits after Close
// still change memory, but nothing writes them.
func (o *Offsets) Close() error {
	o.life.Lock()
	if o.closed.Load() {
		o.life.Unlock()
		return fmt.Errorf("meta: close offsets: %w", ErrClosed)
	}
	o.closed.Store(true)
	close(o.stop)
	o.life.Unlock()
	o.wg.Wait() // from here on only this call persists in the background's stead
	return o.persist()
}
