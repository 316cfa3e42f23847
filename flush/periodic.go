package flush

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Periodic runs a flush (or commit) in the background every interval with
// leastPages, and with 0 pages (any amount) once thorough has passed since
// the last thorough run. Wake runs it at once. Close runs it a last time
// with 0 pages.
type Periodic struct {
	run        func(leastPages int) error
	interval   time.Duration
	thorough   time.Duration
	leastPages int
	log        *slog.Logger
	name       string

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	err  error // of the last run at Close
	// closing is set by the first Close, which alone closes stop.
	closing atomic.Bool
}

// PeriodicOptions configure a Periodic service.
type PeriodicOptions struct {
	Name       string        // for logs, e.g. "commitlog flush"
	Interval   time.Duration // e.g. 500 ms
	Thorough   time.Duration // e.g. 10 s
	LeastPages int           // e.g. 4
	Logger     *slog.Logger
}

// StartPeriodic starts a service calling run.
func StartPeriodic(run func(leastPages int) error, opts PeriodicOptions) *Periodic {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Periodic{
		run:        run,
		interval:   opts.Interval,
		thorough:   opts.Thorough,
		leastPages: opts.LeastPages,
		log:        opts.Logger,
		name:       opts.Name,
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	go p.loop()
	return p
}

// Wake asks for a run now, without waiting for it.
func (p *Periodic) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Periodic) loop() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-p.stop:
			p.err = p.run(0)
			return
		case <-t.C:
		case <-p.wake:
		}
		pages := p.leastPages
		if now := time.Now(); now.Sub(lastThorough) >= p.thorough {
			pages, lastThorough = 0, now
		}
		start := time.Now()
		if err := p.run(pages); err != nil {
			p.log.Error("background "+p.name+" failed", "err", err)
		} else if took := time.Since(start); took > time.Second {
			p.log.Warn("slow "+p.name, "took", took)
		}
	}
}

// Close stops the service after a last run with 0 pages, and returns that
// run's error. Calls after the first return nil.
func (p *Periodic) Close() error {
	if !p.closing.CompareAndSwap(false, true) {
		<-p.done // another Close stops it
		return nil
	}
	close(p.stop)
	<-p.done
	return p.err
}
