package store

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// Why a store refuses puts. Refused puts return an error that wraps
// ErrNotWritable and the sentinel of each cause; test with errors.Is.
var (
	// ErrNotWritable is wrapped by every put the store refuses while it is
	// not writable (RocketMQ's "the message store is not writable"); the
	// error also wraps the causes below and names them.
	ErrNotWritable = errors.New("store: not writable")
	// ErrDispatchStopped: dispatch stopped on a record it could not write
	// into its ConsumeQueue (RocketMQ's WRITE_LOGICS_QUEUE_ERROR; the
	// index does not stop it: see ErrIndexBehind). Puts resume once
	// dispatch gets past it.
	ErrDispatchStopped = errors.New("store: dispatch stopped")
	// ErrFlushFailed: a flush (fsync, msync) of the CommitLog failed. The
	// page cache may have dropped what it held, so a later flush that
	// succeeds proves nothing: the store refuses puts until it is reopened
	// (and recovers from what is on disk). Reads go on.
	ErrFlushFailed = errors.New("store: flush to disk failed")
)

// notWritable is one reason why the store refuses puts.
type notWritable int

const (
	diskFull        notWritable = iota // above DiskSpaceWarningLevelRatio (DISK_FULL)
	dispatchStopped                    // dispatch failed on a record
	flushFailed                        // a CommitLog flush failed: until reopened
	indexBehind                        // the index missed records: until it catches up (indexlag.go)
	numNotWritable
)

var notWritableNames = [numNotWritable]string{
	diskFull:        "disk full",
	dispatchStopped: "dispatch stopped",
	flushFailed:     "flush failed",
	indexBehind:     "index behind",
}

// runningFlags is RocketMQ's RunningFlags for writes: the one place that
// knows whether the store takes puts and, if not, why. Each reason is set
// and cleared by the one part that sees it (expiry for the disk, the
// dispatcher, the CommitLog flush), and every change is logged once.
type runningFlags struct {
	// refused is the error a put gets now; nil while the store is
	// writable. A put loads only this.
	refused atomic.Pointer[notWritableError]

	mu     sync.Mutex // serializes set and clear; guards causes
	causes [numNotWritable]error
	log    *slog.Logger
}

// notWritableError is the error of a refused put: ErrNotWritable and the
// causes, named.
type notWritableError struct {
	causes []error
	msg    string
}

func (e *notWritableError) Error() string { return e.msg }

func (e *notWritableError) Unwrap() []error { return append([]error{ErrNotWritable}, e.causes...) }

// err is the error puts get, nil while the store is writable.
func (f *runningFlags) err() error {
	if e := f.refused.Load(); e != nil {
		return e
	}
	return nil
}

// has reports whether r is set.
func (f *runningFlags) has(r notWritable) bool { return f.cause(r) != nil }

// cause is r's cause, nil when r is not set.
func (f *runningFlags) cause(r notWritable) error {
	if f.refused.Load() == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.causes[r]
}

// set makes r a reason to refuse puts, with cause (which wraps r's
// sentinel), and reports whether r was new; the first set of r is logged,
// later ones only replace the cause.
func (f *runningFlags) set(r notWritable, cause error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	isNew := f.causes[r] == nil
	f.causes[r] = cause
	f.publishLocked()
	if isNew {
		f.log.Error("the store refuses puts", "reason", notWritableNames[r], "err", cause)
	}
	return isNew
}

// clear removes r, logging it if it was set.
func (f *runningFlags) clear(r notWritable) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.causes[r] == nil {
		return
	}
	f.causes[r] = nil
	f.publishLocked()
	if e := f.refused.Load(); e != nil {
		f.log.Warn("a reason to refuse puts is gone; others remain", "gone", notWritableNames[r], "remaining", e.msg)
	} else {
		f.log.Warn("the store takes puts again", "gone", notWritableNames[r])
	}
}

func (f *runningFlags) publishLocked() {
	var e notWritableError
	var msg strings.Builder
	msg.WriteString("store: not writable: ")
	for _, c := range f.causes {
		if c != nil {
			if len(e.causes) > 0 {
				msg.WriteString("; ")
			}
			msg.WriteString(c.Error())
			e.causes = append(e.causes, c)
		}
	}
	if len(e.causes) == 0 {
		f.refused.Store(nil)
		return
	}
	e.msg = msg.String()
	f.refused.Store(&e)
}
