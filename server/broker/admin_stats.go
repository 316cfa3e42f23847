package broker

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/store"
)

// brokerStats counts what GET_BROKER_RUNTIME_INFO and GET_CONSUME_STATS
// report (RocketMQ's StoreStatsService and BrokerStats). The put path
// only adds to an atomic counter (the store's arrival listener); a
// ticker samples the counters once a second into rings, from which the
// rates over 10 s, 1 min and 10 min are read, and keeps the totals of
// midnight for "today" and "yesterday".
type brokerStats struct {
	boot time.Time

	puts        atomic.Int64 // messages dispatched into a ConsumeQueue
	getFound    atomic.Int64 // pulls that found messages
	getMiss     atomic.Int64 // pulls that found none
	transferred atomic.Int64 // messages sent to consumers

	groupsMu sync.RWMutex
	groups   map[topicGroup]*groupStats // messages got per topic and group

	mu        sync.Mutex // guards what follows: the ticker and readers
	samples   ring       // of the four counters above
	day       int        // year*1000+yday of the last sample
	putMorn   [2]int64   // puts at the start of today, yesterday
	getMorn   [2]int64   // transferred at the start of today, yesterday
	groupSamp map[topicGroup]*ring
}

type topicGroup struct{ topic, group string }

type groupStats struct{ got atomic.Int64 }

// ringSize holds 10 minutes of samples and the one before.
const ringSize = 601

// sample is the counters at one instant.
type sample struct {
	at                                int64 // unix ms
	puts, found, miss, transferred, v int64
}

// ring is the last ringSize samples, oldest first once full.
type ring struct {
	s    [ringSize]sample
	n    int // samples taken
	next int
}

func (r *ring) add(s sample) {
	r.s[r.next] = s
	r.next = (r.next + 1) % ringSize
	r.n++
}

// back returns the sample taken k ticks before the newest (0 = newest).
func (r *ring) back(k int) (sample, bool) {
	if k >= min(r.n, ringSize) {
		return sample{}, false
	}
	return r.s[(r.next-1-k+2*ringSize)%ringSize], true
}

// rate is the per-second rate of a counter over the last secs samples, as
// CallSnapshot.getTPS; false while fewer samples were taken.
func (r *ring) rate(secs int, pick func(sample) int64) (float64, bool) {
	last, ok := r.back(0)
	if !ok {
		return 0, false
	}
	before, ok := r.back(secs)
	if !ok {
		return 0, false
	}
	ms := last.at - before.at
	if ms <= 0 {
		return 0, true
	}
	return float64(pick(last)-pick(before)) * 1000 / float64(ms), true
}

func newBrokerStats(now time.Time) *brokerStats {
	s := &brokerStats{boot: now, groups: map[topicGroup]*groupStats{}, groupSamp: map[topicGroup]*ring{}}
	s.tick(now)
	return s
}

// arrived counts a message put, as the store's arrival listener: one
// atomic add, no lock, no allocation.
func (s *brokerStats) arrived(store.Arrival) { s.puts.Add(1) }

// pulled counts a pull's outcome: n messages of topic sent to group.
func (s *brokerStats) pulled(group, topic string, n int) {
	if n == 0 {
		s.getMiss.Add(1)
		return
	}
	s.getFound.Add(1)
	s.transferred.Add(int64(n))
	k := topicGroup{topic, group}
	s.groupsMu.RLock()
	g := s.groups[k]
	s.groupsMu.RUnlock()
	if g == nil {
		s.groupsMu.Lock()
		if g = s.groups[k]; g == nil {
			g = &groupStats{}
			s.groups[k] = g
		}
		s.groupsMu.Unlock()
	}
	g.got.Add(int64(n))
}

// run samples every second until stop closes.
func (s *brokerStats) run(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.tick(now)
		}
	}
}

func (s *brokerStats) tick(now time.Time) {
	cur := sample{at: now.UnixMilli(), puts: s.puts.Load(), found: s.getFound.Load(),
		miss: s.getMiss.Load(), transferred: s.transferred.Load()}
	s.groupsMu.RLock()
	groups := make(map[topicGroup]int64, len(s.groups))
	for k, g := range s.groups {
		groups[k] = g.got.Load()
	}
	s.groupsMu.RUnlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	prev, hadPrev := s.samples.back(0)
	day := now.Year()*1000 + now.YearDay()
	if day != s.day {
		if s.day != 0 {
			s.putMorn[1], s.getMorn[1] = s.putMorn[0], s.getMorn[0]
		} else {
			s.putMorn[1], s.getMorn[1] = cur.puts, cur.transferred
		}
		s.putMorn[0], s.getMorn[0] = cur.puts, cur.transferred
		s.day = day
	}
	s.samples.add(cur)
	for k, v := range groups {
		r := s.groupSamp[k]
		if r == nil {
			r = &ring{}
			s.groupSamp[k] = r
			if hadPrev { // the group got nothing before its first pull
				r.add(sample{at: prev.at})
			}
		}
		r.add(sample{at: cur.at, v: v})
	}
}

// tps formats the rate of a counter over 10 s, 1 min and 10 min as
// StoreStatsService does: three Java doubles separated by spaces, each
// empty until enough samples were taken.
func (s *brokerStats) tps(pick func(sample) int64) string {
	var b []byte
	for i, secs := range []int{10, 60, 600} {
		if i > 0 {
			b = append(b, ' ')
		}
		if r, ok := s.samples.rate(secs, pick); ok {
			b = fastjson.AppendJavaDouble(b, r)
		}
	}
	return string(b)
}

// groupTps is the rate at which group got messages of topic over the
// last minute (tpsGroupGetNums), or over what was sampled of it.
func (s *brokerStats) groupTps(group, topic string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.groupSamp[topicGroup{topic, group}]
	if r == nil {
		return 0
	}
	v := func(x sample) int64 { return x.v }
	if t, ok := r.rate(60, v); ok {
		return t
	}
	t, _ := r.rate(min(r.n, ringSize)-1, v)
	return t
}

// runtimeInfo adds the counters' entries of the runtime info to m.
func (s *brokerStats) runtimeInfo(m map[string]string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	puts, transferred := s.puts.Load(), s.transferred.Load()
	m["bootTimestamp"] = itoa(s.boot.UnixMilli())
	m["runtime"] = formatRuntime(now.Sub(s.boot))
	m["putMessageTimesTotal"] = itoa(max(puts, 1)) // Java reports at least 1
	m["msgPutTotalTodayNow"] = itoa(puts)
	m["msgPutTotalTodayMorning"] = itoa(s.putMorn[0])
	m["msgPutTotalYesterdayMorning"] = itoa(s.putMorn[1])
	m["msgGetTotalTodayNow"] = itoa(transferred)
	m["msgGetTotalTodayMorning"] = itoa(s.getMorn[0])
	m["msgGetTotalYesterdayMorning"] = itoa(s.getMorn[1])
	m["putTps"] = s.tps(func(x sample) int64 { return x.puts })
	m["getFoundTps"] = s.tps(func(x sample) int64 { return x.found })
	m["getMissTps"] = s.tps(func(x sample) int64 { return x.miss })
	m["getTotalTps"] = s.tps(func(x sample) int64 { return x.found + x.miss })
	m["getTransferredTps"] = s.tps(func(x sample) int64 { return x.transferred })
}

// formatRuntime writes a duration as StoreStatsService.getFormatRuntime.
func formatRuntime(d time.Duration) string {
	ms := d.Milliseconds()
	var b strings.Builder
	b.WriteString("[ ")
	b.WriteString(itoa(ms / 86400000))
	b.WriteString(" days, ")
	b.WriteString(itoa(ms % 86400000 / 3600000))
	b.WriteString(" hours, ")
	b.WriteString(itoa(ms % 3600000 / 60000))
	b.WriteString(" minutes, ")
	b.WriteString(itoa(ms % 60000 / 1000))
	b.WriteString(" seconds ]")
	return b.String()
}
