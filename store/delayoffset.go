package store

import "maps"

// DelayOffsets returns a copy of the schedule service's progress: per
// delay level (1, 2, ...), the offset in its SCHEDULE_TOPIC_XXXX queue up
// to which delayed messages were delivered (GET_ALL_DELAY_OFFSET).
func (s *MessageStore) DelayOffsets() map[int]int64 {
	s.sched.mu.Lock()
	defer s.sched.mu.Unlock()
	return maps.Clone(s.sched.offsets)
}

// SetDelayOffsets replaces the schedule service's progress with a master's
// and saves it to config/delayOffset.json (a slave's
// loadWhenSyncDelayOffset): a slave made master later delivers from there.
func (s *MessageStore) SetDelayOffsets(offsets map[int]int64) error {
	s.sched.mu.Lock()
	s.sched.offsets = maps.Clone(offsets)
	s.sched.mu.Unlock()
	return s.sched.persist()
}
