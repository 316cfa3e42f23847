package pop

import (
	"time"

	"github.com/rocketstore/rocketstore/store"
)

// Wait returns a channel closed when a message arrives on topic, when a
// delivery of it becomes visible again, or at Close: a long-polling
// receive pops, waits on it (and its own deadline), and pops again.
func (s *Service) Wait(topic string) <-chan struct{} {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ch := s.waiters[topic]
	if ch == nil {
		ch = make(chan struct{})
		if s.closed.Load() {
			close(ch)
			return ch
		}
		s.waiters[topic] = ch
		s.waiting.Store(int32(len(s.waiters)))
	}
	return ch
}

// Arrived is the store's arrival listener: it wakes the receives waiting
// for a.Topic. Without waiters it costs one atomic load.
func (s *Service) Arrived(a store.Arrival) {
	if s.waiting.Load() == 0 {
		return
	}
	s.wake(a.Topic)
}

func (s *Service) wake(topic string) {
	s.wmu.Lock()
	if ch := s.waiters[topic]; ch != nil {
		close(ch)
		delete(s.waiters, topic)
		s.waiting.Store(int32(len(s.waiters)))
	}
	s.wmu.Unlock()
}

// reviveLoop looks for deliveries whose invisible time ended: it moves
// those delivered too often to the dead-letter topic and wakes the
// receives waiting for the others (Apache's PopReviveService).
func (s *Service) reviveLoop() {
	t := time.NewTicker(s.opts.ReviveInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.revive(time.Now())
		}
	}
}

func (s *Service) revive(now time.Time) {
	nowMs := now.UnixMilli()
	var topics []string
	s.mu.Lock()
	for k, q := range s.queues {
		maxAtt := s.maxAttempts(k.group)
		for o, e := range q.inflight {
			if e.visibleAt > nowMs {
				continue
			}
			if e.attempts >= maxAtt {
				if err := s.retire(k, q, o, e, s.read(k, o)); err != nil {
					s.log.Warn("pop: retiring a message failed; retrying later", "err", err)
				}
				continue
			}
			if !e.woken {
				e.woken = true
				topics = append(topics, k.topic)
			}
		}
	}
	s.mu.Unlock()
	for _, t := range topics {
		s.wake(t)
	}
}
