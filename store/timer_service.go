package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/timer"
)

// timerService is RocketMQ 5's TimerMessageStore: it follows
// rmq_sys_wheel_timer queue 0, puts each message into the slot of its time
// (a unit in the timer log, linked from the wheel), and when a slot's time
// has come puts its messages into their real topics and queues. One
// goroutine does both, so enqueue and delivery never race for a slot.
//
// Every pending timer is a 52-byte unit in the mapped timer log plus its
// slot in the mapped wheel: none costs the Go heap anything.
type timerService struct {
	s          *MessageStore
	wheel      *timer.Wheel
	log        *timer.Log
	ckpt       *timer.Checkpoint
	prec       int64 // timerPrecisionMs
	rollWindow int64 // timerRollWindowSlot × precision, in ms

	// Owned by the loop goroutine (and by open and close, when it is not
	// running):
	readTime    int64 // currReadTimeMs: the next slot to deliver
	writeTime   int64 // currWriteTimeMs: slots before it may be delivered
	queueOffset int64 // the next timer queue offset to enqueue
	slotTime    int64 // the slot being delivered, -1 if none
	slotPos     []int64
	slotNext    int                 // index into slotPos of the next unit to deliver
	slotDeletes map[string]struct{} // timers the slot's delete units cancel, nil if none
	// lastRealTopic is the topic of the last delivery, copied out of its
	// record (see realTopic).
	lastRealTopic string
	// skip holds the deliveries a crash left behind (see recoverSkips):
	// they are not made again. Empty once readTime passes skipUntil.
	skip      map[string]struct{}
	skipUntil int64
	// committed is the (read time, CommitLog offset) pair written to the
	// checkpoint; candidate is the one to write once the CommitLog is
	// flushed past its offset.
	committed, candidate readMark
	lastFlush            time.Time
	lastClean            time.Time
	fileMaxDelay         map[int64]int64 // timer log file -> latest slot time in it

	stats            TimerStats
	readTimeSnapshot atomic.Int64 // readTime, for TimerStatus
	closed           bool
}

// readMark pairs a read time with a CommitLog offset before every
// delivery of that slot and later ones.
type readMark struct{ readTime, deliverFrom int64 }

// TimerStats counts the timer service's work since Open.
type TimerStats struct {
	Enqueued  atomic.Int64 // units written to the timer log
	Delivered atomic.Int64 // messages put into their real topics
	Rolled    atomic.Int64 // messages put back to wait another round
	Skipped   atomic.Int64 // deliveries a crash had made already
	Deleted   atomic.Int64 // timers cancelled by a TIMER_DEL_UNIQKEY message
	Dropped   atomic.Int64 // timer messages that could not be read or put, logged
}

// Timer is a snapshot of the timer service's progress.
type Timer struct {
	Enqueued, Delivered, Rolled, Skipped, Deleted, Dropped int64
	// ReadTimeMs is the next slot to deliver (currReadTimeMs).
	ReadTimeMs int64
}

// TimerStatus reports the timer service's progress; ok is false when the
// timer wheel is disabled.
func (s *MessageStore) TimerStatus() (Timer, bool) {
	t := s.timer.Load()
	if t == nil {
		return Timer{}, false
	}
	return Timer{Enqueued: t.stats.Enqueued.Load(), Delivered: t.stats.Delivered.Load(),
		Rolled: t.stats.Rolled.Load(), Skipped: t.stats.Skipped.Load(), Deleted: t.stats.Deleted.Load(), Dropped: t.stats.Dropped.Load(),
		ReadTimeMs: t.readTimeSnapshot.Load()}, true
}

// timerPoll is how often the timer queue is looked at (100 ms × precision
// / 1 s, as TimerEnqueueGetService and TimerDequeueGetService wait).
func (t *timerService) poll() time.Duration { return time.Duration(100*t.prec/1000) * time.Millisecond }

// startTimer opens the timer files at Open, unless the timer wheel is
// disabled, no timer message has come yet (the files, a 38.7 MB wheel, are
// made when the first one does), or the disk has no room for them (timer
// messages then wait in their queue): in those two cases openTimerLater
// makes them later.
func (s *MessageStore) startTimer() error {
	if s.opts.DisableTimerWheel {
		return nil
	}
	s.timerFrom = s.nowMs()
	if s.timerUnused() {
		s.timerLater = true
		return nil
	}
	t, err := openTimer(s)
	switch {
	case err == nil:
		s.timer.Store(t)
	case errors.Is(err, syscall.ENOSPC):
		s.timerLater = true
		s.log.Warn("the timer files cannot be made, the disk is full; timer messages wait until there is room", "err", err)
	default:
		return err
	}
	return nil
}

// timerUnused reports that the store has neither timer files nor a timer
// message: the files need not be made yet.
func (s *MessageStore) timerUnused() bool {
	if _, err := os.Stat(filepath.Join(s.dir, "timerwheel")); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	return s.cqs.Get(message.TopicTimer, 0) == nil
}

// openTimerLater makes the timer files once the first timer message is
// stored and the disk has room for them, then runs the timer loop until
// the store stops. It looks as often as the timer loop polls its queue.
func (s *MessageStore) openTimerLater() {
	tick := time.NewTicker(time.Duration(100*s.opts.TimerPrecisionMs/1000) * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if s.cqs.Get(message.TopicTimer, 0) == nil {
			continue
		}
		t, err := openTimer(s)
		if errors.Is(err, syscall.ENOSPC) {
			continue
		}
		if err != nil {
			s.log.Error("the timer files cannot be opened; timer messages are not delivered", "err", err)
			return
		}
		s.log.Info("the timer files are made; delivering timer messages")
		s.timer.Store(t)
		t.loop()
		return
	}
}

// openTimer opens the timer files under the store's root and recovers
// them. It runs after the store's own recovery.
func openTimer(s *MessageStore) (*timerService, error) {
	o := s.opts
	t := &timerService{s: s, prec: int64(o.TimerPrecisionMs), rollWindow: int64(o.TimerRollWindowSlot) * int64(o.TimerPrecisionMs),
		slotTime: -1, fileMaxDelay: map[int64]int64{}}
	var err error
	var cp timer.CheckpointValues
	if t.wheel, err = timer.OpenWheel(filepath.Join(s.dir, "timerwheel"), o.TimerPrecisionMs, o.Mapper); err == nil {
		if t.log, err = timer.OpenLog(filepath.Join(s.dir, "timerlog"), timer.LogOptions{FileSize: o.TimerLogFileSize, Mapper: o.Mapper, Logger: s.log}); err == nil {
			t.ckpt, cp, err = timer.OpenCheckpoint(filepath.Join(s.dir, "config", "timercheck"), o.Mapper)
		}
	}
	if err == nil {
		err = t.recover(cp)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("timer: %w", err), t.closeFiles())
	}
	return t, nil
}

func (t *timerService) format(ms int64) int64 { return ms / t.prec * t.prec }

// loop runs enqueue and delivery until the store stops.
func (t *timerService) loop() {
	tm := time.NewTimer(0)
	defer tm.Stop()
	for {
		select {
		case <-t.s.stop:
			return
		case <-tm.C:
		}
		t.step()
		// Wake at the next slot boundary, or to poll the queue.
		d := t.poll()
		if next := t.writeTime + t.prec - t.s.nowMs(); next >= 0 && time.Duration(next)*time.Millisecond < d {
			d = time.Duration(next)*time.Millisecond + time.Millisecond
		}
		tm.Reset(d)
	}
}

// step enqueues what the timer queue holds, delivers every slot whose time
// has come, and flushes when it is time to.
func (t *timerService) step() {
	now := t.s.nowMs()
	if !t.enqueue() {
		return
	}
	if w := t.format(now); w > t.writeTime {
		t.writeTime = w
	}
	for t.readTime < t.writeTime {
		if t.stopping() {
			return
		}
		if !t.deliverSlot() {
			break // a put failed: try again at the next step
		}
		// Keep up with the queue between slots of a long catch-up.
		if !t.enqueue() {
			break
		}
	}
	if time.Since(t.lastFlush) >= t.s.opts.TimerFlushInterval {
		if err := t.flush(); err != nil {
			t.s.log.Error("flushing the timer files failed", "err", err)
		}
	}
	if time.Since(t.lastClean) >= 30*time.Second {
		t.lastClean = time.Now()
		t.clean()
	}
}

func (t *timerService) stopping() bool {
	select {
	case <-t.s.stop:
		return true
	default:
		return false
	}
}

// enqueue writes a unit for each new message of the timer queue
// (TimerEnqueueGetService + TimerEnqueuePutService). It reports false when
// the store is stopping or the timer log cannot be written.
func (t *timerService) enqueue() bool {
	q := t.s.cqs.Get(message.TopicTimer, 0)
	if q == nil {
		return true
	}
	if min := q.MinOffset(); t.queueOffset < min {
		t.s.log.Warn("timer queue offset is before the queue's first unit; skipping ahead", "offset", t.queueOffset, "min", min)
		t.queueOffset = min
	}
	for n := 0; t.queueOffset < q.MaxOffset(); n++ {
		if n%1024 == 1023 && t.stopping() {
			return false
		}
		u, ok := q.Unit(t.queueOffset)
		if !ok {
			return true
		}
		if err := t.enqueueOne(u.Offset, u.Size); err != nil {
			t.s.log.Error("writing the timer log failed; retrying", "queueOffset", t.queueOffset, "err", err)
			return false
		}
		t.queueOffset++
	}
	return true
}

// enqueueOne writes the unit of the timer message at a CommitLog offset
// (doEnqueue). A message that cannot be read is logged and dropped; only a
// timer log that cannot be written is an error.
func (t *timerService) enqueueOne(offset int64, size int32) error {
	r, sl, err := t.s.cl.ReadRecord(offset)
	if err != nil {
		t.stats.Dropped.Add(1)
		t.s.log.Error("dropping a timer message that cannot be read", "offset", offset, "err", err)
		return nil
	}
	var vals [3]string
	found := message.LookupProperties(bytesString(r.Properties()),
		[]string{message.PropertyTimerOutMS, message.PropertyRealTopic, message.PropertyTimerDelUniqKey}, vals[:])
	delayed, perr := strconv.ParseInt(vals[0], 10, 64)
	hash := timer.JavaHash(vals[1])
	sl.Release()
	if found&1 == 0 || perr != nil {
		t.stats.Dropped.Add(1)
		t.s.log.Error("dropping a timer message without a TIMER_OUT_MS", "offset", offset)
		return nil
	}
	magic := int32(timer.MagicDefault)
	if found&4 != 0 {
		magic |= timer.MagicDelete // it cancels the timer it names
	}
	if delayed-t.writeTime >= t.rollWindow {
		magic |= timer.MagicRoll
		if delayed-t.writeTime-t.rollWindow < t.rollWindow/3 {
			delayed = t.writeTime + t.rollWindow/2/t.prec*t.prec // give the next round time
		} else {
			delayed = t.writeTime + t.rollWindow
		}
	}
	// Due already, or in a slot delivered while it waited in the queue: it
	// goes into the next slot to deliver.
	delayed = max(t.format(delayed), t.readTime)
	slot := t.wheel.Slot(delayed)
	pos, err := t.log.Append(timer.Unit{PrevPos: slot.LastPos, Magic: magic, WriteTimeMs: t.writeTime,
		DelayMs: int32(delayed - t.writeTime), CommitLogOffset: offset, Size: size, TopicHash: hash})
	if err != nil {
		return err
	}
	first := slot.FirstPos
	if slot.Empty() {
		first = pos
	}
	t.wheel.Put(timer.Slot{TimeMs: delayed, FirstPos: first, LastPos: pos, Num: max(slot.Num, 0) + 1, Magic: max(slot.Magic, 0)})
	t.stats.Enqueued.Add(1)
	return nil
}

// flush makes the log and wheel durable, then writes the checkpoint. The
// read time it writes is one whose deliveries are all durable in the
// CommitLog; the queue offset, one whose units are all in the log.
func (t *timerService) flush() error {
	t.lastFlush = time.Now()
	if err := errors.Join(t.log.Flush(), t.wheel.Flush()); err != nil {
		return err
	}
	if t.s.cl.FlushedOffset() >= t.candidate.deliverFrom {
		t.committed = t.candidate
	}
	// Taken between slots: no delivery of readTime has begun yet.
	if t.slotTime == -1 {
		t.candidate = readMark{readTime: t.readTime, deliverFrom: t.s.cl.MaxOffset()}
		if t.s.cl.FlushedOffset() >= t.candidate.deliverFrom {
			t.committed = t.candidate
		}
	}
	return t.writeCheckpoint()
}

func (t *timerService) writeCheckpoint() error {
	return t.ckpt.Flush(timer.CheckpointValues{
		LastReadTimeMs:         t.committed.readTime,
		LastTimerLogFlushPos:   t.log.FlushedWhere(),
		LastTimerQueueOffset:   t.queueOffset,
		MasterTimerQueueOffset: t.queueOffset,
		Timestamp:              time.Now().UnixMilli(),
		DeliverFromOffset:      t.committed.deliverFrom,
		DeliverFromKnown:       true,
	})
}

// clean deletes timer log files none of whose units is still pending
// (RocketMQ deletes them by CommitLog offset instead).
func (t *timerService) clean() {
	files := t.log.Files()
	n, err := t.log.DeleteHead(func(from int64) bool {
		if from == files[len(files)-1] {
			return false
		}
		latest, ok := t.fileMaxDelay[from]
		if !ok {
			latest = -1
			if err := t.log.Units(from, func(_ int64, u timer.Unit) bool {
				latest = max(latest, u.DelayedTimeMs())
				return true
			}); err != nil {
				return false
			}
			t.fileMaxDelay[from] = latest
		}
		if latest < t.readTime {
			delete(t.fileMaxDelay, from)
			return true
		}
		return false
	})
	if err != nil {
		t.s.log.Error("deleting old timer log files failed", "deleted", n, "err", err)
	}
}

// close stops nothing (the loop has returned): it flushes and writes the
// checkpoint once the CommitLog holds every delivery, then closes the files.
func (t *timerService) close() error {
	if t.closed {
		return nil
	}
	err := errors.Join(t.log.Flush(), t.wheel.Flush())
	if err == nil {
		if t.slotTime == -1 && t.s.cl.FlushedOffset() >= t.s.cl.MaxOffset() {
			t.committed = readMark{readTime: t.readTime, deliverFrom: t.s.cl.MaxOffset()}
		}
		err = t.writeCheckpoint()
	}
	return errors.Join(err, t.closeFiles())
}

func (t *timerService) closeFiles() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var err error
	if t.wheel != nil {
		err = errors.Join(err, t.wheel.Close())
	}
	if t.log != nil {
		err = errors.Join(err, t.log.Close())
	}
	if t.ckpt != nil {
		err = errors.Join(err, t.ckpt.Close())
	}
	return err
}
