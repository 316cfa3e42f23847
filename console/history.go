package console

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// point is one sample: a value at a time (unix ms).
type point struct {
	T int64
	V float64
}

// maxPoints bounds a series, whatever the sampling.
const maxPoints = 1024

// maxWatched bounds the topics and groups sampled in the background: the
// ones viewed most recently.
const maxWatched = 32

// history keeps the samples of the charts in memory, for a while (no
// database): per broker put and get TPS, and for the topics and groups
// viewed lately their message count and lag.
type history struct {
	keep time.Duration

	mu      sync.Mutex // guards what follows
	series  map[string][]point
	watched map[string]time.Time // "topic:"+name or "lag:"+group -> last viewed
}

func newHistory(keep time.Duration) *history {
	return &history{keep: keep, series: map[string][]point{}, watched: map[string]time.Time{}}
}

// add records v for key at t, dropping samples older than keep.
func (h *history) add(key string, t time.Time, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[key]
	ms := t.UnixMilli()
	if n := len(s); n > 0 && s[n-1].T >= ms {
		s[n-1].V = v // same instant (or a clock step back): replace
		return
	}
	s = append(s, point{ms, v})
	cut := ms - h.keep.Milliseconds()
	i := 0
	for i < len(s) && s[i].T < cut {
		i++
	}
	if len(s)-i > maxPoints {
		i = len(s) - maxPoints
	}
	if i > 0 {
		s = append(s[:0:0], s[i:]...)
	}
	h.series[key] = s
}

// get returns a copy of key's samples.
func (h *history) get(key string) []point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.series[key])
}

// watch marks key as viewed now, so the sampler keeps sampling it.
func (h *history) watch(key string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watched[key] = now
	for len(h.watched) > maxWatched {
		oldest := ""
		for k, t := range h.watched {
			if oldest == "" || t.Before(h.watched[oldest]) {
				oldest = k
			}
		}
		delete(h.watched, oldest)
	}
}

// watchedKeys are the keys viewed within keep, sorted.
func (h *history) watchedKeys(now time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, t := range h.watched {
		if now.Sub(t) > h.keep {
			delete(h.watched, k)
		}
	}
	return slices.Sorted(maps.Keys(h.watched))
}

// rates turns a counter's samples into per-second rates between
// consecutive samples (a counter that went back, e.g. after a reset, gives
// no rate for that step).
func rates(pts []point) []point {
	var out []point
	for i := 1; i < len(pts); i++ {
		dt := float64(pts[i].T-pts[i-1].T) / 1000
		dv := pts[i].V - pts[i-1].V
		if dt <= 0 || dv < 0 {
			continue
		}
		out = append(out, point{pts[i].T, dv / dt})
	}
	return out
}

// lastRate is the rate of the last step of a counter's samples, and
// whether there is one.
func lastRate(pts []point) (float64, bool) {
	r := rates(pts)
	if len(r) == 0 {
		return 0, false
	}
	return r[len(r)-1].V, true
}

// sampleLoop samples the cluster's TPS, and the watched topics and
// groups, every SampleInterval until Close.
func (c *Console) sampleLoop() {
	t := time.NewTicker(c.opts.SampleInterval)
	defer t.Stop()
	c.warm()
	for {
		c.sample()
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
	}
}

// stoppable is a context that ends after d or at Close.
func (c *Console) stoppable(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// warm fetches the lists of names once at start, so that the first list
// page does not wait for them.
func (c *Console) warm() {
	ctx, cancel := c.stoppable(4 * c.opts.Timeout)
	defer cancel()
	c.topicList.get(ctx, c)
	c.groupList.get(ctx, c)
}

func (c *Console) sample() {
	ctx, cancel := c.stoppable(c.opts.SampleInterval)
	defer cancel()
	if bs, err := c.brokers(ctx); err == nil {
		c.recordBrokers(bs, time.Now())
	}
	for _, key := range c.hist.watchedKeys(time.Now()) {
		if ctx.Err() != nil {
			return
		}
		kind, name, _ := strings.Cut(key, ":")
		switch kind {
		case "topic":
			c.sampleTopic(ctx, name)
		case "lag":
			c.sampleGroup(ctx, name)
		}
	}
}

// recordBrokers records the put and get TPS of each broker and of the
// whole cluster.
func (c *Console) recordBrokers(bs []brokerRow, now time.Time) {
	var put, get float64
	for _, b := range bs {
		if b.Err != "" {
			continue
		}
		c.hist.add("put:"+b.Addr, now, b.PutTPS)
		c.hist.add("get:"+b.Addr, now, b.GetTPS)
		if b.ID == 0 {
			put += b.PutTPS
			get += b.GetTPS
		}
	}
	c.hist.add("cluster:put", now, put)
	c.hist.add("cluster:get", now, get)
}

// sampleTopic records a topic's message count (the sum of its queues'
// max offsets), from which its TPS is drawn.
func (c *Console) sampleTopic(ctx context.Context, topic string) (int64, error) {
	stats, err := c.ac.TopicStatsAll(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, o := range stats {
		n += o.MaxOffset
	}
	c.hist.add("topic:"+topic, time.Now(), float64(n))
	return n, nil
}

func (c *Console) sampleGroup(ctx context.Context, group string) {
	cs, err := c.groupStats(ctx, group)
	if err != nil {
		return
	}
	c.hist.add("lag:"+group, time.Now(), float64(cs.Lag()))
}

func ftoa(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
