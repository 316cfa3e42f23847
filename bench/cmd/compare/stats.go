package main

import (
	"os"
	"slices"
	"sync"
	"time"
)

// sample is one row measured once (in one round).
type sample struct {
	ops   float64       // messages (or operations) done
	bytes float64       // payload bytes moved
	secs  float64       // wall time
	p50   time.Duration // 0: not measured
	p99   time.Duration
	cpu   float64 // server CPU seconds; < 0: not measured
	extra float64 // the row's own number (messages per fsync); 0: none
}

func (s sample) rate() float64    { return s.ops / s.secs }
func (s sample) mbps() float64    { return s.bytes / s.secs / 1e6 }
func (s sample) cpuPerM() float64 { return s.cpu / s.ops * 1e6 }

// row is one line of the report: what it measures and every round's sample.
type row struct {
	id, group, system, label string
	unit                     string // what one op is: "msgs", "ops", "batches"
	extraName                string
	samples                  []sample
}

// results keeps rows in the order they were first reported.
type results struct {
	mu    sync.Mutex
	order []*row
	byID  map[string]*row
	onAdd func(x *row, s sample) // progress; may be nil
}

func newResults() *results { return &results{byID: map[string]*row{}} }

// add records one round's sample of row id.
func (r *results) add(proto row, s sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.byID[proto.id]
	if x == nil {
		p := proto
		x = &p
		if x.unit == "" {
			x.unit = "msgs"
		}
		r.byID[proto.id] = x
		r.order = append(r.order, x)
	}
	x.samples = append(x.samples, s)
	if r.onAdd != nil {
		r.onAdd(x, s)
	}
}

// stat is the median and the spread ((max-min)/median) of some values.
type stat struct {
	med, min, max float64
	n             int
}

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	v = slices.Clone(v)
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stat{med: m, min: v[0], max: v[len(v)-1], n: len(v)}
}

// spread is (max-min)/median in percent.
func (s stat) spread() float64 {
	if s.med == 0 {
		return 0
	}
	return (s.max - s.min) / s.med * 100
}

func (x *row) metric(f func(sample) float64) stat {
	var v []float64
	for _, s := range x.samples {
		v = append(v, f(s))
	}
	return statOf(v)
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*q))]
}

// warmOps is how many ops each worker of drive does before the clock starts.
const warmOps = 20

// drive runs workers goroutines, each calling its op until c.dur has passed,
// then finish (if any), and returns how many ops were done, the wall time
// up to the end of finish, and (when timed) every op's latency.
// newOp makes one worker's op before the clock starts. server, when not 0,
// is the pid of the server process the ops talk to: drive waits for it to
// be quiet before the warm-up, and the sample's CPU is then the server's
// over the clock, its other number this process's (the clients') CPU per
// million ops.
func drive(c *config, server, workers int, timed bool, newOp func(w int) (func() error, error), finish func() error) (sample, error) {
	ops := make([]func() error, workers)
	for w := range workers {
		op, err := newOp(w)
		if err != nil {
			return sample{}, err
		}
		ops[w] = op
	}
	settle(c)
	if server != 0 {
		quietServer(c, server)
	}
	// A few ops per worker before the clock starts: connections, routes,
	// first faults and allocations are not what the row measures.
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for range warmOps {
				if err := ops[w](); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return sample{}, err
		}
	}
	counts := make([]int64, workers)
	lats := make([][]time.Duration, workers)
	cpu0, srv0 := processCPU(os.Getpid()), processCPU(server)
	start := time.Now()
	deadline := start.Add(c.dur)
	for w := range workers {
		wg.Go(func() {
			op := ops[w]
			var l []time.Duration
			if timed {
				l = make([]time.Duration, 0, 1<<14)
			}
			n := int64(0)
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				if err := op(); err != nil {
					errs[w] = err
					break
				}
				n++
				if timed {
					l = append(l, time.Since(t0))
				}
			}
			counts[w], lats[w] = n, l
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return sample{}, err
		}
	}
	if finish != nil {
		if err := finish(); err != nil {
			return sample{}, err
		}
	}
	// In-process rows charge the whole process (client and server).
	s := sample{secs: time.Since(start).Seconds(), cpu: processCPU(os.Getpid()) - cpu0}
	for _, c := range counts {
		s.ops += float64(c)
	}
	if server != 0 {
		s.extra, s.cpu = s.cpuPerM(), processCPU(server)-srv0 // the clients', then the server's
	}
	if timed {
		all := slices.Concat(lats...)
		s.p50, s.p99 = percentile(all, 0.5), percentile(all, 0.99)
	}
	return s, nil
}
