package commitlog

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rocketstore/rocketstore/message"
)

// recoverAll is Open's own recovery when the caller does not recover: scan
// every file, and rebuild the queue offsets from the records. A Log on its
// own does not know what was flushed before it was opened, so it takes
// only a bad record that shows no tear for corruption (see Recover).
func (l *Log) recoverAll() error {
	from := max(l.q.MinOffset(), 0)
	_, err := l.Recover(from, Durable{}, func(r message.Record, _ int64) error {
		switch r.SysFlag() & message.TxMask {
		case message.TxPrepared, message.TxRollback: // not in a queue
			return nil
		}
		next := l.queueOffsets[queueKey{string(r.Topic()), r.QueueID()}]
		if next == nil {
			next = new(int64)
			l.queueOffsets[queueKey{string(r.Topic()), r.QueueID()}] = next
		}
		*next = max(*next, r.QueueOffset()+1)
		return nil
	})
	return err
}

// Durable is what the caller of Recover knows of what was durable when the
// log was last written: it is what tells a torn tail from corruption.
type Durable struct {
	// All says the log was closed cleanly: everything in it was flushed.
	All bool
	// Before is a store time in ms such that every record stored before it
	// was flushed: the checkpoint's physicMsgTimestamp. 0: not known.
	Before int64
}

// Recover finds the end of valid data from offset from, which must be the
// start of a record (normally the start of a file), and cuts the log there.
// Each record is checked for consistent lengths, its own physical offset
// and, unless SkipCRCOnRecover, its body CRC, and is passed to visit (which
// may be nil) with its offset; a visit error stops recovery and is
// returned. It returns the end of the valid data.
//
// Where the scan stops, at a bad record or at zeros, Recover looks for a
// valid record further on (in that file and the later ones) and tells:
//
//   - the end of the data: zeros, and nothing valid after them.
//   - a torn tail: what a crash leaves of the writes after the last flush.
//     The log is cut there: later files are deleted and the rest of the
//     file is zeroed, as RocketMQ does.
//   - corruption: the stop is in data that was flushed. That is known when
//     the log was closed cleanly (durable.All: all of it was flushed), when
//     the record before the stop, or a valid one after it, was stored
//     before durable.Before, or when valid records follow a bad record that
//     shows no tear (a write cut short leaves zeros, the files being
//     zero-filled when made; a bit flip does not). Recover then changes
//     nothing and returns a *CorruptionError naming the file and offset
//     (errors.Is(err, ErrCorrupt)), unless Options.Repair is set: then the
//     damaged file and every later one are renamed aside (see
//     CorruptionError.MovedAside), the damaged file's records before the
//     stop are copied into a new file of its name, and the log is opened
//     with them.
//
// Store times are taken to grow along the log: a wall clock set back by
// more than the checkpoint's lag can make a crash's torn tail look flushed,
// and recovery then refuses rather than cut.
//
// Open calls Recover itself from the first file unless
// Options.ExternalRecovery is set; then the caller must call it once,
// before any append. After Recover, LastStoreTimestamp is the store time of
// the last record it kept (0 if it saw none).
func (l *Log) Recover(from int64, durable Durable, visit func(r message.Record, offset int64) error) (int64, error) {
	l.lock.Lock()
	defer l.lock.Unlock()
	it := l.Iterate(from, !l.opts.SkipCRCOnRecover)
	defer it.Close()
	var last int64 // store time of the last valid record
	for it.Next() {
		last = it.Record().StoreTimestamp()
		if visit == nil {
			continue
		}
		if err := visit(it.Record(), it.RecordOffset()); err != nil {
			return it.RecordOffset(), fmt.Errorf("commitlog: recover at %d: %w", it.RecordOffset(), err)
		}
	}
	end, stopErr := it.Offset(), it.Err()
	it.Close()
	ce, next := l.corruption(end, stopErr, last, durable)
	switch hasNext := next >= 0; {
	case ce != nil:
		if !l.opts.Repair {
			return end, ce
		}
		if err := l.moveAside(ce); err != nil {
			return end, fmt.Errorf("commitlog: repair: %w (the log was not repaired: %w)", err, ce)
		}
		l.log.Warn("commit log repaired: damaged files moved aside, opened with the records before the damage",
			"file", ce.File, "offset", ce.Offset, "moved", ce.MovedAside, "err", ce.Err)
	case hasNext:
		l.log.Warn("cutting a torn tail: the records after it were never flushed",
			"offset", end, "next valid record", next, "err", stopErr)
	case stopErr != nil:
		l.log.Warn("cutting a torn tail at its first bad record", "offset", end, "err", stopErr)
	default:
		if f := l.q.Last(); f != nil && end < f.From()+int64(f.WrotePosition()) {
			l.log.Info("commit log recovered", "end", end)
		}
	}
	if err := l.q.Truncate(end); err != nil {
		return end, fmt.Errorf("commitlog: truncate at %d: %w", end, err)
	}
	l.q.SetFlushedWhere(end)
	l.cur = nil
	l.raw.reset(end)
	f, err := l.q.LastOrCreate(end)
	if errors.Is(err, syscall.ENOSPC) {
		// A full disk: the log opens to be read; the first append makes
		// the file, or fails saying the disk is full.
		l.log.Warn("no space for the next commit log file; appends fail until there is", "offset", end, "err", err)
		return end, nil
	}
	if err != nil {
		return end, fmt.Errorf("commitlog: %w", err)
	}
	if f != nil {
		f.SetStoreTimestamp(last)
	}
	if !l.opts.NoWarm && f != nil {
		// The rest of f and the next file are faulted in in the
		// background: a fresh 1 GiB file takes seconds, not for Open to wait.
		l.q.PrepareNext()
	}
	return end, nil
}

// nearEnd is how far past zeros recovery looks for valid records after a
// clean close: far enough for a few lost pages, and cheap where nothing
// follows (the rest of a 1 GiB file).
const nearEnd = 1 << 20

// corruption says whether the scan's stop at end is in flushed data, with
// why, or is the end of the data or a torn tail (nil). last is the store
// time of the record before the stop (0: none). It also returns the offset
// of the valid record it found after the stop, or -1: it searches only
// where the answer depends on it, the whole rest of the log only for a bad
// record of a crashed log that shows no tear.
func (l *Log) corruption(end int64, stopErr error, last int64, durable Durable) (*CorruptionError, int64) {
	flushed := durable.Before > 0 && last > 0 && last < durable.Before
	const flushedWhy = "it was flushed: the record before it is older than the last flush"
	next := int64(-1)
	var why string
	switch {
	case stopErr == nil && flushed:
		why = flushedWhy
	case stopErr == nil:
		if !durable.All && last > 0 {
			return nil, -1 // zeros after what was flushed: the end of the data
		}
		f, ok := l.findValidAfter(end, nearEnd)
		if !ok {
			return nil, -1 // the end of the data
		}
		next = f.offset
		switch {
		case durable.All:
			why = "the log was closed cleanly, so all of it was flushed"
		case durable.Before > 0 && f.storeTime < durable.Before:
			why = "a later record was flushed"
		default:
			return nil, next // lost pages, then some that reached the disk unflushed
		}
	case durable.All:
		why = "the log was closed cleanly, so all of it was flushed"
	case flushed:
		why = flushedWhy
	default: // a bad record in a crashed log, perhaps torn
		f, ok := l.findValidAfter(end, nearEnd)
		if !ok {
			if last > 0 && l.showsTear(end, end+nearEnd) {
				// Torn, with nothing near: what may follow further on is
				// newer than the record before, so not flushed either.
				return nil, -1
			}
			if f, ok = l.findValidAfter(end, 0); !ok {
				return nil, -1 // nothing follows: a torn tail
			}
		}
		next = f.offset
		switch {
		case durable.Before > 0 && f.storeTime < durable.Before:
			why = "a later record was flushed"
		case l.showsTear(end, f.offset):
			return nil, next
		default:
			why = "valid records follow it, and it shows no tear"
		}
	}
	file, pos := "", end
	if f := l.q.FindByOffset(end); f != nil {
		file, pos = f.Path(), end-f.From()
	}
	cause := stopErr
	if cause == nil {
		cause = errors.New("zeros where records should be")
	}
	return &CorruptionError{File: file, Offset: end, FileOffset: pos, Next: next, Reason: why, Err: cause}, next
}
