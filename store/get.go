package store

import (
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/consumequeue"
	"github.com/rocketstore/rocketstore/mappedfile"
)

// GetResult is the answer of GetMessage (GetMessageResult). Messages are
// slices of the mapped CommitLog, one record each, not copies: call
// Release when done with them; the result must not be used afterwards.
type GetResult struct {
	Status GetStatus
	// NextBeginOffset is the queue offset to pull from next.
	NextBeginOffset int64
	// MinOffset and MaxOffset are the queue's offsets at the time of the call.
	MinOffset, MaxOffset int64
	// Messages are the records found, in queue order.
	Messages []mappedfile.Slice
	// BufferTotalSize is the byte length of all Messages.
	BufferTotalSize int
	// SuggestPullingFromSlave says the consumer is far behind: what it
	// reads next is no longer in memory (suggestPullingFromSlave).
	SuggestPullingFromSlave bool

	reader commitlog.Reader // holds the files of Messages
	// released is set by the first Release: a second one must not put the
	// result into the pool again, or two GetMessage calls would share it.
	released atomic.Bool
}

var getResults = sync.Pool{New: func() any { return new(GetResult) }}

// Release gives the records' files back and recycles the result. Calls
// after the first do nothing.
func (r *GetResult) Release() {
	if !r.released.CompareAndSwap(false, true) {
		return
	}
	r.reader.Release()
	clear(r.Messages)
	r.Status, r.NextBeginOffset, r.MinOffset, r.MaxOffset = 0, 0, 0, 0
	r.Messages, r.BufferTotalSize, r.SuggestPullingFromSlave = r.Messages[:0], 0, false
	getResults.Put(r)
}

// Limits of one GetMessage answer for messages no longer in memory
// (maxTransferBytesOnMessageInDisk, maxTransferCountOnMessageInDisk) and the
// part of memory that counts as holding the newest messages
// (accessMessageInMemoryMaxRatio).
const (
	maxTransferBytesOnDisk     = 64 << 10
	maxTransferCountOnDisk     = 8
	accessInMemoryMaxRatio     = 40
	minFilterMessageCount      = 16000
	unitsPerRead               = 64
	filterMessageCountPerBatch = 20
)

// GetMessage reads up to maxMsgNums messages of topic/queueID from queue
// offset offset that pass filter (nil: all), as RocketMQ's getMessage does,
// including its statuses and next-offset corrections. group names the
// consumer group asking; it is not used to filter.
func (s *MessageStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int, filter Filter) *GetResult {
	r := getResults.Get().(*GetResult)
	r.released.Store(false)
	r.reader.Reset(s.cl)
	r.Status, r.NextBeginOffset = NoMessageInQueue, offset
	q := s.cqs.Get(topic, queueID)
	if q == nil {
		r.Status, r.NextBeginOffset = NoMatchedLogicQueue, 0
		return r
	}
	r.MinOffset, r.MaxOffset = q.MinOffset(), q.MaxOffset()
	switch {
	case r.MaxOffset == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, 0
	case offset < r.MinOffset:
		r.Status, r.NextBeginOffset = OffsetTooSmall, r.MinOffset
	case offset == r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
	case offset > r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, r.MaxOffset
	default:
		s.readQueue(r, q, offset, maxMsgNums, filter)
	}
	return r
}

// readQueue fills r from the units of q at offset, within [min, max).
func (s *MessageStore) readQueue(r *GetResult, q *consumequeue.Queue, offset int64, maxMsgNums int, filter Filter) {
	var units [unitsPerRead]consumequeue.Unit
	maxOffsetPy := s.cl.MaxOffset()
	maxScan := int64(max(minFilterMessageCount, maxMsgNums*filterMessageCountPerBatch))
	nextPhyFileStart := int64(-1)
	fileSize := int64(s.cl.FileSize())
	r.Status = NoMatchedMessage
	index := offset
	scanned := int64(0)
	rf, _ := filter.(RecordFilter)
	for scanned < maxScan && index < r.MaxOffset {
		n, err := q.Read(index, units[:min(int64(unitsPerRead), maxScan-scanned)])
		if err != nil || n == 0 {
			if index == offset {
				// The unit's file is gone: skip to the next file of the queue.
				per := int64(s.opts.ConsumeQueueFileUnits)
				r.Status, r.NextBeginOffset = OffsetFoundNull, offset+per-offset%per
				return
			}
			break
		}
		for _, u := range units[:n] {
			if nextPhyFileStart >= 0 && u.Offset < nextPhyFileStart {
				index++
				scanned++
				continue
			}
			inDisk := s.memBytes > 0 && maxOffsetPy-u.Offset > s.memBytes
			if s.batchFull(r, int(u.Size), maxMsgNums, inDisk) {
				r.NextBeginOffset, r.SuggestPullingFromSlave = index, inDisk
				return
			}
			index++
			scanned++
			if filter != nil && !filter.MatchTagsCode(u.TagsCode) {
				continue
			}
			m, err := r.reader.Read(u.Offset, int(u.Size))
			if err != nil {
				if len(r.Messages) == 0 {
					r.Status = MessageWasRemoving
				}
				nextPhyFileStart = u.Offset + fileSize - u.Offset%fileSize
				continue
			}
			if rf != nil && !rf.MatchRecord(m.Bytes()) {
				continue
			}
			r.Messages = append(r.Messages, m)
			r.BufferTotalSize += int(u.Size)
			r.Status = Found
			nextPhyFileStart = -1
		}
		if n == 0 {
			break
		}
	}
	r.NextBeginOffset = index
	if next := index; next < r.MaxOffset {
		if u, ok := q.Unit(next); ok {
			r.SuggestPullingFromSlave = s.memBytes > 0 && maxOffsetPy-u.Offset > s.memBytes
		}
	}
}

// batchFull is RocketMQ's isTheBatchFull.
func (s *MessageStore) batchFull(r *GetResult, size, maxMsgNums int, inDisk bool) bool {
	count := len(r.Messages)
	if r.BufferTotalSize == 0 || count == 0 {
		return false
	}
	if count >= maxMsgNums {
		return true
	}
	if inDisk {
		return r.BufferTotalSize+size > maxTransferBytesOnDisk || count > maxTransferCountOnDisk-1
	}
	return r.BufferTotalSize+size > s.opts.MaxTransferBytes || count > s.opts.MaxTransferCount-1
}
