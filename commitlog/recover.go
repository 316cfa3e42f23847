package commitlog

import (
	"fmt"

	"github.com/rocketstore/rocketstore/message"
)

// recover finds the end of valid data in the loaded files, cuts everything
// after it, and rebuilds the queue offsets from the records. It runs in
// Open, before the Log is shared.
func (l *Log) recover() error {
	first := l.q.First()
	if first == nil {
		return nil
	}
	it := l.Iterate(first.From(), !l.opts.SkipCRCOnRecover)
	defer it.Close()
	for it.Next() {
		r := it.Record()
		switch r.SysFlag() & message.TxMask {
		case message.TxPrepared, message.TxRollback: // not in a queue
			continue
		}
		next := l.queueOffsets[queueKey{string(r.Topic()), r.QueueID()}]
		if next == nil {
			next = new(int64)
			l.queueOffsets[queueKey{string(r.Topic()), r.QueueID()}] = next
		}
		*next = max(*next, r.QueueOffset()+1)
	}
	end := it.Offset()
	if err := it.Err(); err != nil {
		l.log.Warn("cutting the commit log at its first bad record", "offset", end, "err", err)
	}
	it.Close()
	if err := l.q.Truncate(end); err != nil {
		return fmt.Errorf("truncate at %d: %w", end, err)
	}
	l.q.SetFlushedWhere(end)
	return nil
}
