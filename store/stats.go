package store

// Read-only figures for the broker's runtime info (GET_BROKER_RUNTIME_INFO)
// and metrics. None takes a lock on the put path.

// MinPhyOffset is the CommitLog's smallest offset still stored
// (getMinPhyOffset).
func (s *MessageStore) MinPhyOffset() int64 { return s.cl.MinOffset() }

// MaxPhyOffset is the CommitLog's write position (getMaxPhyOffset).
func (s *MessageStore) MaxPhyOffset() int64 { return s.cl.MaxOffset() }

// DispatchBehindBytes is how far dispatch trails the CommitLog: bytes
// written but not yet in their ConsumeQueues (dispatchBehindBytes).
func (s *MessageStore) DispatchBehindBytes() int64 {
	return max(s.cl.MaxOffset()-s.disp.from.Load(), 0)
}

// FlushBehindBytes is the CommitLog bytes written but not yet flushed
// (remainHowManyDataToFlush).
func (s *MessageStore) FlushBehindBytes() int64 {
	return max(s.cl.MaxOffset()-s.cl.FlushedOffset(), 0)
}

// CommitLogDiskRatio is the used fraction of the filesystem holding the
// CommitLog (commitLogDiskRatio), or -1 when it cannot be read.
func (s *MessageStore) CommitLogDiskRatio() float64 {
	return usedRatio(s.paths.CommitLog)
}

// ConsumeQueueDiskRatio is the used fraction of the filesystem holding the
// ConsumeQueues (consumeQueueDiskRatio), or -1.
func (s *MessageStore) ConsumeQueueDiskRatio() float64 {
	return usedRatio(s.paths.ConsumeQueue)
}

func usedRatio(dir string) float64 {
	r, err := statfsUsage(dir)
	if err != nil {
		return -1
	}
	return r
}

// GetMessageStoreTimeStamp is the store time of the message at a queue
// offset, or -1 (getMessageStoreTimeStamp).
func (s *MessageStore) GetMessageStoreTimeStamp(topic string, queueID int32, queueOffset int64) int64 {
	q := s.cqs.Get(topic, queueID)
	if q == nil {
		return -1
	}
	u, ok := q.Unit(queueOffset)
	if !ok {
		return -1
	}
	t, ok := s.storeTime(u.Offset, u.Size)
	if !ok {
		return -1
	}
	return t
}
