package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/indexfile"
)

// ErrIndexBehind: the index could not take a dispatched record's keys (a
// full disk, most often: a new index file or the next step of its entries
// could not be allocated). Dispatch goes on without it, so everything
// stored is consumable, and the reput goroutine indexes the records it
// missed once it can; until then puts are refused (RocketMQ's
// "the message store is not writable"), and a query by key may miss the
// newest messages (QueryResult.IndexBehind).
var ErrIndexBehind = errors.New("store: the index is behind the consume queues")

// indexRetryEvery is how often the reput goroutine tries again to index
// the records the index missed.
const indexRetryEvery = 100 * time.Millisecond

// The index lag (dispatcher.indexLag) is the first CommitLog offset whose
// record's keys are not indexed, plus 1; 0 when the index has every
// record below the reput offset. While it is set, dispatch puts no index
// entries (the index must take records in CommitLog order), and
// catchUpIndex puts those of the records from there up to the reput
// offset, then clears it.

// indexFailed records that putting the index entries of the records from
// offset from on failed with err: the index lags from there. The caller
// holds mu.
func (d *dispatcher) indexFailed(from int64, err error) {
	if d.indexLag == 0 || from+1 < d.indexLag {
		d.indexLag = from + 1
	}
	d.indexLagging.Store(true)
	d.flags.set(indexBehind, fmt.Errorf("%w from CommitLog offset %d: %w", ErrIndexBehind, d.indexLag-1, err))
}

// catchUpIndex puts the index entries of the records from the index lag
// up to the reput offset, at most every indexRetryEvery, and clears the
// lag if it gets there. The caller holds mu.
func (d *dispatcher) catchUpIndex() {
	if d.indexLag == 0 || d.stopped || time.Since(d.indexTried) < indexRetryEvery {
		return
	}
	d.indexTried = time.Now()
	from, to := max(d.indexLag-1, d.cl.MinOffset()), d.from.Load()
	var it commitlog.Iterator
	it.Reset(d.cl, from, false)
	defer it.Close()
	var batch []indexfile.Message
	batchFrom := from
	fileSize := int64(d.cl.FileSize())
	// put puts the batch; its strings alias the iterator's current file.
	put := func() bool {
		if len(batch) == 0 {
			return true
		}
		if err := d.index.PutBatch(batch); err != nil {
			d.indexFailed(batchFrom, err)
			return false
		}
		batch = batch[:0]
		return true
	}
	var rec recordInfo
	for it.Next() {
		off := it.RecordOffset()
		if off >= to {
			break
		}
		if len(batch) > 0 && (off/fileSize != batchFrom/fileSize || len(batch) == indexBatch) && !put() {
			return
		}
		rec.fill(it.Record(), off)
		if len(batch) == 0 {
			batchFrom = off
		}
		if p := &rec.props; p.has(propKeys) || p.has(propUniqKey) {
			batch = append(batch, indexfile.Message{Topic: rec.topic, Keys: p.vals[propKeys], UniqKey: p.vals[propUniqKey],
				PhyOffset: off, StoreTimestamp: rec.storeTimestamp, SysFlag: rec.sysFlag})
		}
	}
	if !put() {
		return
	}
	if err := it.Err(); err != nil {
		d.indexFailed(it.Offset(), err)
		return
	}
	d.indexLag = 0
	d.indexLagging.Store(false)
	d.flags.clear(indexBehind)
	d.log.Info("the index caught up with the consume queues", "offset", to)
}
