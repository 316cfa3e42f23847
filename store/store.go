package store

import (
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

	cl    *commitlog.Log
	cqs   *consumequeue.Table
	index *indexfile.Service // nil when DisableIndex

	checkpoint *recovery.Checkpoint
	abort      recovery.Abort
	services   services
	// lastDispatchedTime is the store time of the last record dispatched
	// (the checkpoint's logicsMsgTimestamp once flushed).
	lastDispatchedTime atomic.Int64
	diskFull           atomic.Bool // set by expiry: puts are refused
	delays             []time.Duration
	sched              *scheduler

	listenersMu sync.Mutex // serialises changes to listeners
	listeners   atomic.Pointer[[]ArrivalListener]

	reput    reputState
	memBytes int64 // physical memory, for the in-memory read limits

	flushLatency LatencyHistogram // see FlushLatency

	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Open opens the store in dir, creating it if needed: {dir}/commitlog,
// {dir}/consumequeue/{topic}/{queueId}, {dir}/index, {dir}/checkpoint. If
// the last run crashed ({dir}/abort is there), it recovers: the CommitLog is
// cut at its first bad record, ConsumeQueue units and index entries past it
// are dropped, and everything after the checkpoint is dispatched again.
func Open(dir string, opts Options) (*MessageStore, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	s := &MessageStore{dir: dir, opts: opts, log: opts.Logger, stop: make(chan struct{}), abort: recovery.NewAbort(dir)}
	s.reput.wake = make(chan struct{}, 1)
	s.reput.advanced = make(chan struct{})
	s.delays, _ = parseDelayLevels(opts.MessageDelayLevel) // checked by validate
	if err := s.open(); err != nil {
		return nil, errors.Join(fmt.Errorf("store: open %s: %w", dir, err), s.closeParts())
	}
	s.startServices()
	s.wg.Go(s.reputLoop)
	s.wg.Go(s.cleanLoop)
	s.wg.Go(s.sched.loop)
	return s, nil
}

func (s *MessageStore) open() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
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
	if s.checkpoint, err = recovery.OpenCheckpoint(filepath.Join(s.dir, "checkpoint"), s.opts.Mapper); err != nil {
		return err
	}
	if s.cl, err = commitlog.Open(filepath.Join(s.dir, "commitlog"), s.opts.commitLog()); err != nil {
		return err
	}
	if s.cqs, err = consumequeue.OpenTable(filepath.Join(s.dir, "consumequeue"), s.opts.consumeQueue()); err != nil {
		return err
	}
	if !s.opts.DisableIndex {
		if s.index, err = indexfile.Open(filepath.Join(s.dir, "index"), s.opts.index()); err != nil {
			return err
		}
	}
	if err := s.recover(s.abort.Exists()); err != nil {
		return err
	}
	if s.sched, err = newScheduler(s); err != nil {
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
	// What was put before Close is dispatched; a put still under way must
	// not dispatch into the files closed below.
	s.lockOther()
	s.dispatchReadable(nil)
	s.reput.stopped = true
	s.unlockOther()
	if s.index != nil {
		err = errors.Join(err, s.index.Flush())
	}
	err = errors.Join(err, s.cqs.Flush(0))
	s.checkpoint.Update(func(v *recovery.CheckpointValues) {
		v.PhysicMsgTimestamp = max(v.PhysicMsgTimestamp, s.cl.LastStoreTimestamp())
		v.LogicsMsgTimestamp = max(v.LogicsMsgTimestamp, s.lastDispatchedTime.Load())
	})
	caughtUp := s.DispatchedOffset() >= s.cl.MaxOffset()
	err = errors.Join(err, s.closeParts())
	if err == nil && caughtUp {
		err = s.abort.Remove()
	}
	return err
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
