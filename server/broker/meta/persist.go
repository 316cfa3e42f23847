package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// minCompactBytes is the journal size below which the JSON file is not
// rewritten however small it is.
const minCompactBytes = 1 << 20

// persister makes the changes of one table durable: each change is a
// journal record; the records added while one write is under way are
// written together by the next (group commit: one write and one fsync for
// all of them); and once the journal holds as many bytes as the JSON
// file, the file is written whole and the journal starts over. The cost
// of a change so does not grow with the table, and a rewrite of the file
// is shared by as many changes as it has bytes.
type persister struct {
	file configFile
	j    journal
	log  *slog.Logger
	// table is the read lock of the table: held while pending records are
	// taken and the file is encoded, so the two describe one state.
	table sync.Locker
	// encode returns the JSON file of the whole table; called with table held.
	encode func() []byte

	pendMu  sync.Mutex // guards pending, seq
	pending []byte     // records not yet handed to a write
	seq     uint64     // records added so far

	mu       sync.Mutex // one write at a time; guards the fields below
	done     uint64     // records durable
	failedTo uint64     // the records of the last failed write end here
	failErr  error
	fileSize int    // bytes of the JSON file last read or written
	spare    []byte // the other pending buffer
	// compactAt is the journal size below which the file is not
	// rewritten however small it is: minCompactBytes (tests lower it).
	compactAt int
	// writes counts journal appends (one per group of records).
	writes atomic.Int64
	// mustRewrite: a write failed, so the next one writes the whole
	// table (the records of the failed one are in memory only).
	mustRewrite bool
}

// newPersister returns the persister of the config file at path; fsys
// nil: the operating system's.
func newPersister(path string, fsys vfs.FS, log *slog.Logger, table sync.Locker, encode func() []byte) *persister {
	if fsys == nil {
		fsys = vfs.OS{}
	}
	return &persister{
		file:      configFile{path: path, log: log, fs: fsys},
		j:         journal{path: path + ".journal", fs: fsys},
		log:       log,
		table:     table,
		encode:    encode,
		compactAt: minCompactBytes,
	}
}

// load reads the JSON file (or its .bak) with decode, then the journal's
// records over it with apply. A journal that belongs to another version
// of the file is ignored (logged); a torn last record is dropped, and
// rewritten away by the first append.
func (p *persister) load(decode func([]byte) error, apply func(journalRecord) error) error {
	var snapshot []byte
	err := p.file.load(func(b []byte) error {
		if err := decode(b); err != nil {
			return err
		}
		snapshot = b
		return nil
	})
	if err != nil {
		return err
	}
	p.fileSize = len(snapshot)
	p.j.header = journalHeader(snapshot)
	data, err := p.file.fsys().ReadFile(p.j.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("meta: read %s: %w", p.j.path, err)
	}
	valid, matches, err := readJournal(data, snapshot, apply)
	if err != nil {
		return fmt.Errorf("meta: %s: %w", p.j.path, err)
	}
	if !matches {
		if len(data) > 0 {
			p.log.Warn("ignoring a config journal written over another version of its file",
				"journal", p.j.path, "file", p.file.path)
		}
		return nil
	}
	if valid < len(data) {
		p.log.Warn("config journal ends in a torn record; dropped it", "journal", p.j.path,
			"bytes", len(data)-valid)
	}
	p.j.size = int64(valid)
	return nil
}

// add queues a record and returns its sequence number for wait. Callers
// hold the table's write lock, so records queue in the order their
// changes were made.
func (p *persister) add(kind byte, v protocol.DataVersion, key string, value []byte) uint64 {
	p.pendMu.Lock()
	p.pending = appendRecord(p.pending, kind, v, key, value)
	p.seq++
	seq := p.seq
	p.pendMu.Unlock()
	return seq
}

// wait returns once record seq is durable, writing it (and every record
// queued with it) itself unless another write already has, or the error
// of the write that failed to.
func (p *persister) wait(seq uint64) error { return p.waitFor(seq, false) }

// waitFor is wait; retry writes again records whose write failed.
func (p *persister) waitFor(seq uint64, retry bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done >= seq {
		return nil
	}
	if seq <= p.failedTo && !retry {
		return p.failErr
	}
	err, rewriteErr := p.writeLocked(false)
	if err == nil && rewriteErr != nil {
		p.log.Error("rewriting a config file failed; its journal holds the changes", "file", p.file.path, "err", rewriteErr)
	}
	return err
}

// flush makes every record added so far durable, writing again those
// whose write failed.
func (p *persister) flush() error {
	p.pendMu.Lock()
	seq := p.seq
	p.pendMu.Unlock()
	return p.waitFor(seq, true)
}

// sync writes the JSON file whole now, with every change made so far,
// and starts the journal over: what a Java broker reads is then the whole
// table. It closes the journal file until the next change.
func (p *persister) sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err, rewriteErr := p.writeLocked(true)
	p.j.drop()
	if err != nil {
		return err
	}
	return rewriteErr
}

// writeLocked writes the queued records, and rewrites the JSON file too
// if whole is set or the journal has outgrown it. err is the error of the
// records (nil: they are durable); rewriteErr that of a rewrite that
// failed after the records were made durable in the journal.
func (p *persister) writeLocked(whole bool) (err, rewriteErr error) {
	p.table.Lock()
	p.pendMu.Lock()
	recs, to := p.pending, p.seq
	p.pending, p.spare = p.spare[:0], nil
	p.pendMu.Unlock()
	whole = whole || p.mustRewrite || p.j.size+int64(len(recs)) > int64(max(p.compactAt, p.fileSize))
	var snapshot []byte
	if whole {
		snapshot = p.encode()
	}
	p.table.Unlock()
	defer func() { p.spare = recs[:0] }()

	var appendErr error
	if len(recs) > 0 {
		appendErr = p.j.append(recs)
		p.writes.Add(1)
	}
	if !whole {
		if appendErr != nil {
			// Records of the failed batch are in memory only: the next
			// write writes the whole table.
			p.mustRewrite = true
		}
		return p.finishLocked(to, appendErr), nil
	}
	// The journal has the records, or the file about to be written will.
	if err := p.file.save(func() []byte { return snapshot }); err != nil {
		p.mustRewrite = true
		if appendErr == nil {
			return p.finishLocked(to, nil), err
		}
		return p.finishLocked(to, errors.Join(appendErr, err)), nil
	}
	p.mustRewrite = false
	p.fileSize = len(snapshot)
	if err := p.j.reset(snapshot); err != nil {
		// The file holds everything; the old journal no longer matches
		// it and is ignored at open.
		p.log.Error("starting a config journal over failed", "journal", p.j.path, "err", err)
	}
	return p.finishLocked(to, nil), nil
}

func (p *persister) finishLocked(to uint64, err error) error {
	if err != nil {
		p.failedTo, p.failErr = to, err
		return err
	}
	p.done = to
	return nil
}

// setFS makes the persister write through fsys (tests).
func (p *persister) setFS(fsys vfs.FS) {
	p.file.fs = fsys
	p.j.fs = fsys
}
