package consumequeue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// SummaryName is the file, in a Table's root, where Table.WriteSummary
// records every queue's positions at a clean shutdown, so that the next
// OpenTableLazy opens no queue until it is used. It is not a topic name a
// Table accepts. RocketMQ's loader lists only folders of the root and
// passes over it.
const SummaryName = ".cq-summary"

// summaryMagic starts a summary file; a file that starts otherwise is not
// one (or one of another layout).
const summaryMagic = "RSCQSUM1"

// ErrBadSummary is returned by decodeSummary for a file that is not a
// whole summary: its checksum, its lengths or its names do not hold.
var ErrBadSummary = errors.New("consumequeue: bad summary")

// entry is what a summary records of one queue: enough for recovery (the
// queue offset table, the largest CommitLog offset dispatched) and expiry
// (the head's CommitLog offset) without opening the queue.
type entry struct {
	min, max int64
	// maxPhys is the CommitLog offset just after the last unit's message,
	// -1 when there is none; headPhys is the CommitLog offset of the unit
	// at min, -1 when not known.
	maxPhys, headPhys int64
}

// entrySize is the fixed part of one encoded entry: topic length (2),
// queue id (4), min, max, maxPhys, headPhys (8 each).
const entrySize = 2 + 4 + 4*8

// encodeSummary lays out keys and entries: the magic, a count (4), the
// entries (topic length, topic, the fixed fields, big-endian), and the
// xxhash64 of everything before it (8).
func encodeSummary(keys []key, es []entry) []byte {
	n := len(summaryMagic) + 4 + 8
	for _, k := range keys {
		n += entrySize + len(k.topic)
	}
	b := make([]byte, 0, n)
	b = append(b, summaryMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for i, k := range keys {
		b = binary.BigEndian.AppendUint16(b, uint16(len(k.topic)))
		b = append(b, k.topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(k.id))
		for _, v := range [...]int64{es[i].min, es[i].max, es[i].maxPhys, es[i].headPhys} {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
	}
	return binary.BigEndian.AppendUint64(b, xxhash.Sum64(b))
}

// decodeSummary reads what encodeSummary wrote, refusing anything whose
// checksum, lengths, names or positions do not hold.
func decodeSummary(b []byte) (map[key]entry, error) {
	head := len(summaryMagic) + 4
	if len(b) < head+8 || string(b[:len(summaryMagic)]) != summaryMagic {
		return nil, fmt.Errorf("%w: no header", ErrBadSummary)
	}
	body, sum := b[:len(b)-8], binary.BigEndian.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return nil, fmt.Errorf("%w: checksum", ErrBadSummary)
	}
	count := binary.BigEndian.Uint32(b[len(summaryMagic):])
	if uint64(count) > uint64(len(body)-head)/entrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrBadSummary, count, len(b))
	}
	m := make(map[key]entry, count)
	p := body[head:]
	for range count {
		if len(p) < 2 {
			return nil, fmt.Errorf("%w: short entry", ErrBadSummary)
		}
		tl := int(binary.BigEndian.Uint16(p))
		if len(p) < 2+tl+entrySize-2 {
			return nil, fmt.Errorf("%w: short entry", ErrBadSummary)
		}
		k := key{topic: string(p[2 : 2+tl])}
		p = p[2+tl:]
		k.id = int32(binary.BigEndian.Uint32(p))
		var v [4]int64
		for i := range v {
			v[i] = int64(binary.BigEndian.Uint64(p[4+8*i:]))
		}
		p = p[entrySize-2:]
		e := entry{min: v[0], max: v[1], maxPhys: v[2], headPhys: v[3]}
		if checkName(k.topic, k.id) != nil || k.topic == SummaryName || e.min < 0 || e.min > e.max || e.maxPhys < -1 || e.headPhys < -1 {
			return nil, fmt.Errorf("%w: entry %q/%d", ErrBadSummary, k.topic, k.id)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%w: %q/%d twice", ErrBadSummary, k.topic, k.id)
		}
		m[k] = e
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the entries", ErrBadSummary, len(p))
	}
	return m, nil
}

// readSummary reads the summary in root, if any. It returns nil entries
// when there is none or it does not decode (logged). The file stays until
// dropSummaryLocked, called before anything is written: a summary
// describes the files of one clean shutdown only, and an open refused
// before any write leaves the disk as it found it.
func (t *Table) readSummary() (map[key]entry, error) {
	b, err := os.ReadFile(filepath.Join(t.root, SummaryName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("consumequeue: read summary: %w", err)
	}
	t.summaryOnDisk = true
	m, err := decodeSummary(b)
	if err != nil {
		t.log.Warn("ignoring the consume queue summary", "err", err)
		return nil, nil
	}
	return m, nil
}

// dropSummaryLocked removes the summary read at open, durably, once; the
// table calls it before it opens, creates or removes a queue. t.mu is held.
func (t *Table) dropSummaryLocked() error {
	if !t.summaryOnDisk {
		return nil
	}
	if err := os.Remove(filepath.Join(t.root, SummaryName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("consumequeue: remove summary: %w", err)
	}
	if err := mappedfile.SyncDir(t.root); err != nil {
		return err
	}
	t.summaryOnDisk = false
	return nil
}

// WriteSummary records every queue's positions in root/SummaryName,
// durably (a temporary file synced, renamed, the folder synced), for the
// next OpenTableLazy after a clean shutdown. The caller writes it only
// once every queue is flushed and nothing writes to them any more.
func (t *Table) WriteSummary() error {
	t.mu.RLock()
	keys := make([]key, 0, len(t.queues)+len(t.lazy))
	es := make([]entry, 0, cap(keys))
	for k, q := range t.queues {
		keys = append(keys, k)
		es = append(es, entry{min: q.min.Load(), max: q.max.Load(), maxPhys: q.maxPhys.Load(), headPhys: q.headPhys.Load()})
	}
	for k, e := range t.lazy {
		keys = append(keys, k)
		es = append(es, e)
	}
	t.mu.RUnlock()
	b := encodeSummary(keys, es)
	name := filepath.Join(t.root, SummaryName)
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("consumequeue: write summary: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("consumequeue: write summary: %w", err)
	}
	return mappedfile.SyncDir(t.root)
}
