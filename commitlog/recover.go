package commitlog

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rocketstore/rocketstore/message"
)

// recoverAll is Open's own recovery when the caller does not recover: scan
// every file, and rebuild the queue offsets from the records.
func (l *Log) recoverAll() error {
	from := max(l.q.MinOffset(), 0)
	_, err := l.Recover(from, func(r message.Record, _ int64) error {
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

// Recover finds the end of valid data from offset from, which must be the
// start of a record (normally the start of a file), and cuts the log there:
// later files are deleted and the rest of the last file is zeroed. Each valid
// record is checked for consistent lengths, its own physical offset and,
// unless SkipCRCOnRecover, its body CRC, and is passed to visit (which may
// be nil) with its offset; a visit error stops recovery and is returned.
// It returns the end of the valid data.
//
// Open calls Recover itself from the first file unless
// Options.ExternalRecovery is set; then the caller must call it once,
// before any append.
func (l *Log) Recover(from int64, visit func(r message.Record, offset int64) error) (int64, error) {
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
	end := it.Offset()
	if err := it.Err(); err != nil {
		l.log.Warn("cutting the commit log at its first bad record", "offset", end, "err", err)
	} else if last := l.q.Last(); last != nil && end < last.From()+int64(last.WrotePosition()) {
		l.log.Info("commit log recovered", "end", end)
	}
	it.Close()
	if err := l.q.Truncate(end); err != nil {
		return end, fmt.Errorf("commitlog: truncate at %d: %w", end, err)
	}
	l.q.SetFlushedWhere(end)
	l.cur = nil
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
	if !l.opts.NoWarm && f != nil {
		// The rest of f and the next file are faulted in in the
		// background: a fresh 1 GiB file takes seconds, not for Open to wait.
		l.q.PrepareNext()
	}
	return end, nil
}
