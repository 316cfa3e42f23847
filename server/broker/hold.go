package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// holdService holds pulls that found nothing (RocketMQ's
// PullRequestHoldService): the store's arrival listener wakes those of the
// message's queue at once; a periodic check answers the ones whose suspend
// timeout passed, and catches any arrival missed.
type holdService struct {
	b *Broker

	mu    sync.Mutex // guards held, dirty, checking, inCheck and stopped
	held  map[holdKey][]*pullRequest
	dirty map[holdKey]struct{}
	// checking is the key whose pulls check has taken out of held to pull
	// again, when inCheck: an arrival for it wakes them whatever their
	// filters.
	checking holdKey
	inCheck  bool
	// stopped is set once the held pulls were answered at close: a pull
	// that would be held after that is answered at once, or it would keep
	// the broker's shutdown waiting until its suspend timeout.
	stopped bool
	count   atomic.Int64 // pulls held, so arrivals skip the lock when none are

	wake    chan struct{}
	closing atomic.Bool // set by the first close
	stop    chan struct{}
	done    chan struct{}
}

type holdKey struct {
	topic   string
	queueID int32
}

// holdCheckInterval is the fallback check of held pulls (RocketMQ: 5 s).
const holdCheckInterval = time.Second

func newHoldService(b *Broker) *holdService {
	h := &holdService{
		b:     b,
		held:  make(map[holdKey][]*pullRequest),
		dirty: make(map[holdKey]struct{}),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go h.loop()
	return h
}

// suspend holds p until a message arrives for its queue or its suspend
// timeout passes.
func (h *holdService) suspend(p *pullRequest, maxOffset int64) {
	p.req.Defer()
	p.deadline = time.Now().Add(time.Duration(p.suspendMillis) * time.Millisecond)
	k := holdKey{p.topic, p.queueID}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		h.respond(p, h.b.pull(p, false))
		return
	}
	h.held[k] = append(h.held[k], p)
	h.count.Add(1)
	h.mu.Unlock()
	// A message may have arrived between the read and the hold.
	if h.b.store.GetMaxOffsetInQueue(p.topic, p.queueID) > maxOffset {
		h.markDirty(k)
	}
}

// arrived is the store's arrival listener; it must not block. As
// RocketMQ's NotifyMessageArrivingListener hands the message's tags code
// and properties to each held pull's filter, a message that none of the
// queue's held pulls can match wakes none of them (the periodic check
// still looks at them).
func (h *holdService) arrived(a store.Arrival) {
	if h.count.Load() == 0 {
		return
	}
	k := holdKey{a.Topic, a.QueueID}
	if !h.wanted(k, a) {
		return
	}
	h.markDirty(k)
}

// arrivalFilter is a filter that can decide from an arriving message's
// properties (an SQL92 expression).
type arrivalFilter interface {
	MatchProperties(props string) bool
}

// wanted reports whether a held pull of k may match the arrival a. When
// none is held, or check has them out, it says yes: the arrival marks the
// key dirty as it always did.
func (h *holdService) wanted(k holdKey, a store.Arrival) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps, ok := h.held[k]
	if !ok || h.inCheck && h.checking == k {
		return true
	}
	for _, p := range ps {
		if p.filter == nil {
			return true
		}
		if !p.filter.MatchTagsCode(a.TagsCode) {
			continue
		}
		if af, ok := p.filter.(arrivalFilter); !ok || af.MatchProperties(a.Properties) {
			return true
		}
	}
	return false
}

func (h *holdService) markDirty(k holdKey) {
	h.mu.Lock()
	h.dirty[k] = struct{}{}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *holdService) loop() {
	defer close(h.done)
	t := time.NewTicker(holdCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			h.answerAll()
			return
		case <-h.wake:
			h.mu.Lock()
			keys := make([]holdKey, 0, len(h.dirty))
			for k := range h.dirty {
				keys = append(keys, k)
			}
			clear(h.dirty)
			h.mu.Unlock()
			for _, k := range keys {
				h.check(k, false)
			}
		case <-t.C:
			h.mu.Lock()
			keys := make([]holdKey, 0, len(h.held))
			for k := range h.held {
				keys = append(keys, k)
			}
			h.mu.Unlock()
			for _, k := range keys {
				h.check(k, true)
			}
		}
	}
}

// check pulls again for the held pulls of k and answers those that found
// something, whose time is up, or whose client is gone; the rest stay.
func (h *holdService) check(k holdKey, timeouts bool) {
	h.mu.Lock()
	ps := h.held[k]
	delete(h.held, k)
	h.checking, h.inCheck = k, true
	h.mu.Unlock()
	now := time.Now()
	var keep []*pullRequest
	for _, p := range ps {
		select {
		case <-p.req.Conn.Done():
			h.count.Add(-1)
			continue
		default:
		}
		resp := h.b.pull(p, false)
		if resp != nil && resp.Code == remoting.PullNotFound && (!timeouts || now.Before(p.deadline)) {
			keep = append(keep, p)
			continue
		}
		h.count.Add(-1)
		h.respond(p, resp)
	}
	h.mu.Lock()
	if len(keep) > 0 {
		h.held[k] = append(h.held[k], keep...)
	}
	h.inCheck = false
	h.mu.Unlock()
}

func (h *holdService) respond(p *pullRequest, resp *remoting.Command) {
	if err := p.req.Respond(resp); err != nil {
		h.b.log.Debug("answering a held pull failed", "err", err)
	}
}

// answerAll answers every held pull as it stands: at shutdown.
func (h *holdService) answerAll() {
	h.mu.Lock()
	all := h.held
	h.held = make(map[holdKey][]*pullRequest)
	h.stopped = true
	h.mu.Unlock()
	for _, ps := range all {
		for _, p := range ps {
			h.count.Add(-1)
			h.respond(p, h.b.pull(p, false))
		}
	}
}

// close answers the held pulls and stops the service; pulls that would
// be held from then on are answered at once. Every call returns once the
// service has stopped.
func (h *holdService) close() {
	if h.closing.CompareAndSwap(false, true) {
		close(h.stop)
	}
	<-h.done
}
