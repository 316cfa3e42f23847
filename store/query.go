package store

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/consumequeue"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// ErrIndexDisabled is returned by QueryMessage when the store has no index.
var ErrIndexDisabled = errors.New("store: the message index is disabled")

// QueryResult is the answer of QueryMessage (QueryMessageResult). Release
// it when done with Messages.
type QueryResult struct {
	// Messages are the records found, newest first, as mapped slices.
	Messages []mappedfile.Slice
	// IndexLastUpdateTimestamp and IndexLastUpdatePhyoffset say how far the
	// index reached when the query ran.
	IndexLastUpdateTimestamp, IndexLastUpdatePhyoffset int64
	// IndexBehind says the index has not taken every dispatched record
	// yet (it could not be written: ErrIndexBehind): a message stored
	// after IndexLastUpdatePhyoffset may be missing from Messages.
	IndexBehind bool
}

// Release gives the records' files back.
func (r *QueryResult) Release() {
	for _, m := range r.Messages {
		m.Release()
	}
	r.Messages = nil
}

// QueryMessage finds up to maxNum messages of topic whose KEYS hold key or
// whose UNIQ_KEY is key, stored within [begin, end] (ms), newest first.
// Unlike RocketMQ, which compares only hashes, each record is checked to
// really carry the key, so hash collisions return nothing extra.
func (s *MessageStore) QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryResult, error) {
	if s.index == nil {
		return nil, ErrIndexDisabled
	}
	ts, off := s.index.LastUpdate()
	res := &QueryResult{IndexLastUpdateTimestamp: ts, IndexLastUpdatePhyoffset: off, IndexBehind: s.disp.indexLagging.Load()}
	offsets, err := s.index.Query(topic, key, maxNum, begin, end)
	if err != nil {
		return nil, fmt.Errorf("store: query %s#%s: %w", topic, key, err)
	}
	for i, off := range offsets {
		if slices.Contains(offsets[:i], off) {
			continue // a record indexed twice (re-dispatched after a restart)
		}
		r, sl, err := s.cl.ReadRecord(off)
		if err != nil {
			continue // expired since it was indexed
		}
		if !recordHasKey(r, topic, key) {
			sl.Release()
			continue
		}
		res.Messages = append(res.Messages, sl) // exactly the record's bytes
	}
	return res, nil
}

func recordHasKey(r message.Record, topic, key string) bool {
	if bytesString(r.Topic()) != topic {
		return false
	}
	props := r.Properties()
	if uniq, ok := message.LookupProperty(props, message.PropertyUniqClientMessageIDKeyIndex); ok && bytesString(uniq) == key {
		return true
	}
	keys, _ := message.LookupProperty(props, message.PropertyKeys)
	for k := range message.Keys(keys) {
		if bytesString(k) == key {
			return true
		}
	}
	return false
}

// LookMessageByOffset returns the record stored at a CommitLog offset (for
// view-by-msgId), without copying. Release the slice when done.
func (s *MessageStore) LookMessageByOffset(phyOffset int64) (message.Record, mappedfile.Slice, error) {
	r, sl, err := s.cl.ReadRecord(phyOffset)
	if err != nil {
		return nil, sl, fmt.Errorf("store: look up offset %d: %w", phyOffset, err)
	}
	return r, sl, nil
}

// ErrNoQueue is returned for a topic/queue the store has never seen.
var ErrNoQueue = errors.New("store: no such queue")

func (s *MessageStore) queue(topic string, queueID int32) (*consumequeue.Queue, error) {
	q := s.cqs.Get(topic, queueID)
	if q == nil {
		return nil, fmt.Errorf("store: %s/%d: %w", topic, queueID, ErrNoQueue)
	}
	return q, nil
}

// GetMaxOffsetInQueue is the queue offset the next message of the queue
// will get once dispatched; 0 for an unknown queue.
func (s *MessageStore) GetMaxOffsetInQueue(topic string, queueID int32) int64 {
	if q := s.cqs.Get(topic, queueID); q != nil {
		return q.MaxOffset()
	}
	return 0
}

// GetMinOffsetInQueue is the smallest queue offset still stored; 0 for an
// unknown queue.
func (s *MessageStore) GetMinOffsetInQueue(topic string, queueID int32) int64 {
	if q := s.cqs.Get(topic, queueID); q != nil {
		return q.MinOffset()
	}
	return 0
}

// GetCommitLogOffsetInQueue is the CommitLog offset of the message at a
// queue offset.
func (s *MessageStore) GetCommitLogOffsetInQueue(topic string, queueID int32, queueOffset int64) (int64, error) {
	q, err := s.queue(topic, queueID)
	if err != nil {
		return 0, err
	}
	u, ok := q.Unit(queueOffset)
	if !ok {
		return 0, fmt.Errorf("store: %s/%d has no message at queue offset %d: %w", topic, queueID, queueOffset, commitlog.ErrNotFound)
	}
	return u.Offset, nil
}

// storeTime reads the store timestamp of the record at a CommitLog offset.
func (s *MessageStore) storeTime(phyOffset int64, size int32) (int64, bool) {
	r, sl, err := s.cl.ReadRecord(phyOffset)
	if err != nil {
		return 0, false
	}
	defer sl.Release()
	return r.StoreTimestamp(), true
}

// GetOffsetInQueueByTime is the queue offset of the first message stored
// at or after timestamp (ms), found by binary search; the queue's max
// offset if none is.
func (s *MessageStore) GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64 {
	q := s.cqs.Get(topic, queueID)
	if q == nil {
		return 0
	}
	return q.OffsetByTime(timestamp, s.storeTime)
}

// GetEarliestMessageTime is the store time of the oldest message of the
// queue still stored.
func (s *MessageStore) GetEarliestMessageTime(topic string, queueID int32) (int64, error) {
	q, err := s.queue(topic, queueID)
	if err != nil {
		return 0, err
	}
	u, ok := q.Unit(q.MinOffset())
	if !ok {
		return 0, fmt.Errorf("store: %s/%d is empty: %w", topic, queueID, commitlog.ErrNotFound)
	}
	t, ok := s.storeTime(u.Offset, u.Size)
	if !ok {
		return 0, fmt.Errorf("store: %s/%d: oldest message at %d: %w", topic, queueID, u.Offset, commitlog.ErrNotFound)
	}
	return t, nil
}

// GetStoreEarliestMessageTime is the store time of the oldest record in the
// CommitLog.
func (s *MessageStore) GetStoreEarliestMessageTime() (int64, error) {
	min := s.cl.MinOffset()
	if min < 0 {
		return 0, commitlog.ErrNotFound
	}
	t, ok := s.storeTime(min, 0)
	if !ok {
		return 0, fmt.Errorf("store: oldest record at %d: %w", min, commitlog.ErrNotFound)
	}
	return t, nil
}
