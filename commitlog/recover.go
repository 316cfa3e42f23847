package commitlog

import (
	"errors"
	"fmt"

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
// valid record further on, in that file and the later ones, and tells:
//
//   - a torn tail: nothing valid follows, or what follows was never
//     flushed (a crash writes unflushed pages back in any order). The log
//     is cut there: later files are deleted and the rest of the file is
//     zeroed, as RocketMQ does.
//   - corruption: valid records follow, and the bad one was durable: the
//     log was closed cleanly (durable.All), or a record after it was
//     stored before durable.Before, or the bad record shows no tear (a
//     write cut short leaves a 512-byte sector of zeros in the record, the
//     files being zero-filled when made, and a bit flip does not). Recover
//     then changes nothing and returns a *CorruptionError naming the file
//     and offset (errors.Is(err, ErrCorrupt)), unless Options.Repair is set:
//     then the damaged file and every later one are renamed aside (see
//     CorruptionError.MovedAside), the damaged file's records before the
//     bad one are copied into a new file of its name, and the log is
//     opened with them.
//
// Open calls Recover itself from the first file unless
// Options.ExternalRecovery is set; then the caller must call it once,
// before any append.
func (l *Log) Recover(from int64, durable Durable, visit func(r message.Record, offset int64) error) (int64, error) {
	l.lock.Lock()
	defer l.lock.Unlock()
	it := l.Iterate(from, !l.opts.SkipCRCOnRecover)
	defer it.Close()
	for it.Next() {
		if visit == nil {
			continue
		}
		if err := visit(it.Record(), it.RecordOffset()); err != nil {
			return it.RecordOffset(), fmt.Errorf("commitlog: recover at %d: %w", it.RecordOffset(), err)
		}
	}
	end, stopErr := it.Offset(), it.Err()
	it.Close()
	if next, ok := l.findValidAfter(end); ok {
		if err := l.classify(end, stopErr, next, durable); err != nil {
			var ce *CorruptionError
			if !l.opts.Repair || !errors.As(err, &ce) {
				return end, err
			}
			if err := l.moveAside(ce); err != nil {
				return end, fmt.Errorf("commitlog: repair: %w (the log was not repaired: %w)", err, ce)
			}
			l.log.Warn("commit log repaired: damaged files moved aside, opened with the records before the damage",
				"file", ce.File, "offset", ce.Offset, "moved", ce.MovedAside)
		} else {
			l.log.Warn("cutting a torn tail: later records were never flushed",
				"offset", end, "next valid record", next.offset, "err", stopErr)
		}
	} else if stopErr != nil {
		l.log.Warn("cutting a torn tail at its first bad record", "offset", end, "err", stopErr)
	} else if last := l.q.Last(); last != nil && end < last.From()+int64(last.WrotePosition()) {
		l.log.Info("commit log recovered", "end", end)
	}
	if err := l.q.Truncate(end); err != nil {
		return end, fmt.Errorf("commitlog: truncate at %d: %w", end, err)
	}
	l.q.SetFlushedWhere(end)
	l.cur = nil
	f, err := l.q.LastOrCreate(end)
	if err != nil {
		return end, fmt.Errorf("commitlog: %w", err)
	}
	if !l.opts.NoWarm {
		if err := f.Warm(); err != nil {
			return end, fmt.Errorf("commitlog: %w", err)
		}
	}
	return end, nil
}

// classify decides whether the scan's stop at end, with a valid record
// next after it, is corruption (a *CorruptionError) or a torn tail (nil).
func (l *Log) classify(end int64, stopErr error, next found, durable Durable) error {
	torn := l.showsTear(end, next.offset)
	if !durable.All && (durable.Before <= 0 || next.storeTime >= durable.Before) && torn {
		return nil
	}
	file, pos := "", end
	if f := l.q.FindByOffset(end); f != nil {
		file, pos = f.Path(), end-f.From()
	}
	cause := stopErr
	if cause == nil {
		cause = errors.New("zeros where a record should be")
	}
	why := "the bad record shows no tear"
	switch {
	case durable.All:
		why = "the log was closed cleanly"
	case durable.Before > 0 && next.storeTime < durable.Before:
		why = "a later record was flushed"
	}
	return &CorruptionError{
		File:       file,
		Offset:     end,
		FileOffset: pos,
		Next:       next.offset,
		Reason:     why,
		Err:        cause,
	}
}
