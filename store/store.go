package store

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/consumequeue"
	"github.com/rocketstore/rocketstore/indexfile"
	"github.com/rocketstore/rocketstore/recovery"
)

// Errors of the MessageStore. Refused puts also wrap message.ErrBadTopic
// or commitlog.ErrTooLarge; test with errors.Is.
var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store: closed")
	// ErrLocked means another process has the store open.
	ErrLocked = errors.New("store: locked by another process")
	// ErrBadQueueID refuses a negative queue id.
	ErrBadQueueID = errors.New("store: bad queue id")
)

// MessageStore is RocketMQ's DefaultMessageStore: a CommitLog, the
// ConsumeQueue of every topic/queue, and the IndexFiles, kept in step by
// dispatch, one record at a time in CommitLog order. It is safe for
// concurrent use.
type MessageStore struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File // holds the flock on {dir}/lock

	paths Paths // where each part lives: Options.Paths resolved under dir

	cl    *commitlog.Log
	cqs   *consumequeue.Table
	index *indexfile.Service // nil when DisableIndex

	checkpoint *recovery.Checkpoint
	abort      recovery.Abort
	services   services
	delays     []time.Duration
	sched      *scheduler
	// timer is nil when DisableTimerWheel, and until its files are made
	// (timerLater): at the first timer message, or once a full disk has room.
	timer      atomic.Pointer[timerService]
	timerLater bool  // the timer files were not opened at Open: none yet, or the disk is full
	timerFrom  int64 // when Open looked at the timer files (ms): a fresh timer reads from here

	flags    runningFlags                  // whether puts are taken, and if not why
	disp     *dispatcher                   // builds the ConsumeQueues and the index
	replica  atomic.Pointer[replicaWaiter] // a SYNC_MASTER's wait for its slave; nil: none
	memBytes int64                         // accessMessageInMemoryMaxRatio of physical memory: the in-memory read limit

	flushLatency LatencyHistogram // see FlushLatency

	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Open opens the store in dir, creating it if needed: {dir}/commitlog,
// {dir}/consumequeue/{topic}/{queueId}, {dir}/index, {dir}/checkpoint
// (each elsewhere if Options.Paths says so). If
// the last run crashed ({dir}/abort is there), it recovers: the CommitLog is
// cut at its torn tail, ConsumeQueue units and index entries past it are
// dropped, and everything after the checkpoint is dispatched again. A
// corrupt record in the middle of the CommitLog (valid records after it)
// is not a torn tail: Open fails with an error wrapping
// commitlog.ErrCorrupt (a *commitlog.CorruptionError naming the file and
// offset) and deletes nothing, unless Options.RepairCommitLog is set.
func Open(dir string, opts Options) (*MessageStore, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	paths := opts.Paths.resolved(dir)
	s := &MessageStore{dir: dir, paths: paths, opts: opts, log: opts.Logger, stop: make(chan struct{}), abort: recovery.AbortAt(paths.Abort)}
	s.flags.log = opts.Logger
	s.delays, _ = parseDelayLevels(opts.MessageDelayLevel) // checked by validate
	if err := s.open(); err != nil {
		return nil, errors.Join(fmt.Errorf("store: open %s: %w", dir, err), s.closeParts())
	}
	s.startServices()
	s.wg.Go(func() { s.disp.loop(s.stop) })
	s.wg.Go(s.cleanLoop)
	if !s.opts.Replica { // a slave delivers no delayed or timer messages: its master does
		s.wg.Go(s.sched.loop)
		if t := s.timer.Load(); t != nil {
			s.wg.Go(t.loop)
		} else if s.timerLater {
			s.wg.Go(s.openTimerLater)
		}
	}
	return s, nil
}

func (s *MessageStore) open() error {
	for _, d := range []string{s.dir, filepath.Dir(s.paths.Checkpoint), filepath.Dir(s.paths.Abort)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	lock, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return fmt.Errorf("%s is in use; stop the other process or use another directory: %w", s.dir, ErrLocked)
	}
	s.lock = lock
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) == nil {
		s.memBytes = int64(info.Totalram) * int64(info.Unit)
	}
	if s.opts.TotalPhysicalMemory > 0 {
		s.memBytes = s.opts.TotalPhysicalMemory
	}
	s.memBytes = s.memBytes * int64(cmp.Or(s.opts.AccessMessageInMemoryMaxRatio, accessInMemoryMaxRatio)) / 100
	if s.checkpoint, err = recovery.OpenCheckpoint(s.paths.Checkpoint, s.opts.Mapper); err != nil {
		return err
	}
	if s.cl, err = commitlog.Open(s.paths.CommitLog, s.opts.commitLog()); err != nil {
		return err
	}
	crashed := s.abort.Exists()
	// After a clean shutdown the queues open on first use, as the summary
	// written at Close describes them; after a crash, every one now.
	if s.cqs, err = consumequeue.OpenTableLazy(s.paths.ConsumeQueue, s.opts.consumeQueue(), !crashed); err != nil {
		return err
	}
	if !s.opts.DisableIndex {
		io := s.opts.index()
		io.OnFileFull = s.indexFileFull
		if s.index, err = indexfile.Open(s.paths.Index, io); err != nil {
			return err
		}
	}
	s.disp = newDispatcher(s.cl, s.cqs, s.index, s.opts, s.delays, &s.flags)
	if err := s.recover(crashed); err != nil {
		return err
	}
	if s.sched, err = newScheduler(s); err != nil {
		return err
	}
	if err := s.startTimer(); err != nil {
		return err
	}
	return s.abort.Create()
}

// Close lets dispatch catch up, stops the services, flushes and closes
// every file, and removes the abort file if all of that succeeded. Calls
// after the first return ErrClosed.
func (s *MessageStore) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(s.stop)
	s.wg.Wait()
	err := s.sched.persist()
	err = errors.Join(err, s.services.close())
	if t := s.timer.Load(); t != nil {
		err = errors.Join(err, t.close()) // after the CommitLog's last flush
	}
	// What was put before Close is dispatched; a put still under way must
	// not dispatch into the files closed below.
	s.disp.close()
	if s.opts.Replica {
		// A record the master had not finished sending is cut, so that
		// the log closed cleanly holds whole records only.
		err = errors.Join(err, s.cl.DropPartialRecord())
	}
	if s.index != nil {
		err = errors.Join(err, s.markIndex()) // the checkpoint is flushed as it closes
	}
	// The checkpoint names only what was flushed: recovery takes a bad
	// record before its times for damage, not for a torn tail.
	_, clErr := s.flushCommitLog(0)
	cqErr := s.cqs.Flush(0)
	if cqErr == nil {
		s.checkpoint.Update(func(v *recovery.CheckpointValues) {
			v.LogicsMsgTimestamp = max(v.LogicsMsgTimestamp, s.disp.lastTime.Load())
		})
	}
	err = errors.Join(err, clErr, cqErr)
	caughtUp := s.DispatchedOffset() >= s.cl.MaxOffset()
	// After a failed flush, a flush at close that succeeds proves nothing:
	// the abort file stays, so the next Open recovers from the disk.
	err = errors.Join(err, s.flags.cause(flushFailed), s.closeParts())
	if err == nil && caughtUp {
		// The summary lets the next Open leave the queues closed until
		// used; it is trusted only with the abort file gone.
		err = s.cqs.WriteSummary()
	}
	if err == nil && caughtUp {
		err = s.abort.Remove()
	}
	return err
}

// indexFileFull records, once a full index file is flushed, its
// endTimestamp as the checkpoint's indexMsgTimestamp and flushes the
// checkpoint (IndexService.flush): after a crash, recovery keeps the index
// files up to it and indexes again only what came after.
func (s *MessageStore) indexFileFull(endTimestamp int64) {
	s.checkpoint.Update(func(v *recovery.CheckpointValues) {
		v.IndexMsgTimestamp = max(v.IndexMsgTimestamp, endTimestamp)
	})
	if err := s.checkpoint.Flush(); err != nil {
		s.log.Error("flushing the checkpoint after an index file filled failed", "err", err)
	}
}

func (s *MessageStore) closeParts() error {
	var err error
	if s.cl != nil {
		err = errors.Join(err, s.cl.Close())
	}
	if s.cqs != nil {
		err = errors.Join(err, s.cqs.Close())
	}
	if s.index != nil {
		err = errors.Join(err, s.index.Close())
	}
	if t := s.timer.Load(); t != nil {
		err = errors.Join(err, t.closeFiles())
	}
	if s.checkpoint != nil {
		err = errors.Join(err, s.checkpoint.Close())
	}
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close()) // releases the flock
	}
	return err
}

// Dir is the store's root folder.
func (s *MessageStore) Dir() string { return s.dir }

// CommitLog is the store's CommitLog, for replication and tools.
func (s *MessageStore) CommitLog() *commitlog.Log { return s.cl }

// bytesString views b as a string without copying, for look-ups and calls
// that do not keep the string.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
