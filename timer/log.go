package timer

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"unsafe"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// Timer log layout (TimerLog.java).
const (
	// UnitSize is the length of one unit.
	UnitSize = 52
	// BlankMagic marks the blank tail of a file (BLANK_MAGIC_CODE).
	BlankMagic uint32 = 0xCBD43194
	// minBlank is the length of a blank tail: bytes left, 0, magic.
	minBlank = 4 + 8 + 4
	// DefaultLogFileSize is mappedFileSizeTimerLog.
	DefaultLogFileSize = 100 << 20
)

// Unit magics (TimerMessageStore.MAGIC_*): a unit is a normal timer, or a
// roll (the message goes back to the timer topic to wait another round),
// or a delete (it cancels another timer).
const (
	MagicDefault = 1
	MagicRoll    = 1 << 1
	MagicDelete  = 1 << 2
)

// MagicOK is TimerMessageStore.isMagicOK.
func MagicOK(magic int32) bool { return magic|0xF == 0xF }

// ErrCorrupt reports a unit that cannot be read.
var ErrCorrupt = errors.New("timer: corrupt timer log unit")

// Unit is one entry of the timer log.
type Unit struct {
	PrevPos         int64 // the slot's unit before this one, -1 if none
	Magic           int32
	WriteTimeMs     int64 // the write time when it was enqueued (currWriteTimeMs)
	DelayMs         int32 // slot time - WriteTimeMs
	CommitLogOffset int64 // the timer message's record
	Size            int32 // its length
	TopicHash       int32 // JavaHash of its REAL_TOPIC
}

// DelayedTimeMs is the time of the slot the unit is in.
func (u Unit) DelayedTimeMs() int64 { return u.WriteTimeMs + int64(u.DelayMs) }

// Encode writes u into p (UnitSize bytes), the size field last.
func (u Unit) Encode(p []byte) {
	p = p[:UnitSize]
	be.PutUint64(p[4:], uint64(u.PrevPos))
	be.PutUint32(p[12:], uint32(u.Magic))
	be.PutUint64(p[16:], uint64(u.WriteTimeMs))
	be.PutUint32(p[24:], uint32(u.DelayMs))
	be.PutUint64(p[28:], uint64(u.CommitLogOffset))
	be.PutUint32(p[36:], uint32(u.Size))
	be.PutUint32(p[40:], uint32(u.TopicHash))
	be.PutUint64(p[44:], 0)
	be.PutUint32(p, UnitSize)
}

// DecodeUnit reads the unit at the start of p. It fails on a short p, a
// size other than UnitSize or a bad magic; a blank tail gives errBlank.
func DecodeUnit(p []byte) (Unit, error) {
	if len(p) < minBlank {
		return Unit{}, fmt.Errorf("%d bytes: %w", len(p), ErrCorrupt)
	}
	size, magic := int32(be.Uint32(p)), int32(be.Uint32(p[12:]))
	if uint32(magic) == BlankMagic {
		return Unit{}, errBlank
	}
	if size != UnitSize || len(p) < UnitSize || !MagicOK(magic) {
		return Unit{}, fmt.Errorf("size %d, magic %d: %w", size, magic, ErrCorrupt)
	}
	return Unit{
		PrevPos:         int64(be.Uint64(p[4:])),
		Magic:           magic,
		WriteTimeMs:     int64(be.Uint64(p[16:])),
		DelayMs:         int32(be.Uint32(p[24:])),
		CommitLogOffset: int64(be.Uint64(p[28:])),
		Size:            int32(be.Uint32(p[36:])),
		TopicHash:       int32(be.Uint32(p[40:])),
	}, nil
}

var errBlank = errors.New("timer: blank tail")

// LogOptions configure a Log. The zero value works.
type LogOptions struct {
	// FileSize is each file's size; 0 means DefaultLogFileSize.
	FileSize int
	// Mapper maps the files; nil means mmap.
	Mapper mappedfile.Mapper
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

// Log is the append-only timer log (TimerLog.java): files of UnitSize
// units named by their start offset. One goroutine appends; reads may run
// alongside.
type Log struct {
	q        *mappedfile.Queue
	fileSize int
	log      *slog.Logger
}

// OpenLog opens the timer log folder dir. Call Recover before appending:
// until then every file counts as full.
func OpenLog(dir string, opts LogOptions) (*Log, error) {
	if opts.FileSize == 0 {
		opts.FileSize = DefaultLogFileSize
	}
	if opts.FileSize < UnitSize+minBlank || opts.FileSize%4096 != 0 {
		return nil, fmt.Errorf("timer: log file size %d must be a multiple of 4096", opts.FileSize)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	q, err := mappedfile.OpenQueue(dir, opts.FileSize, mappedfile.QueueOptions{Mapper: opts.Mapper, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("timer: open log: %w", err)
	}
	return &Log{q: q, fileSize: opts.FileSize, log: opts.Logger}, nil
}

// FileSize is the size of each file.
func (l *Log) FileSize() int { return l.fileSize }

// MinOffset is the start of the first file, or -1 when there is none.
func (l *Log) MinOffset() int64 { return l.q.MinOffset() }

// End is where the next unit goes: the written end of the log.
func (l *Log) End() int64 { return l.q.MaxWrotePosition() }

// FlushedWhere is the offset up to which the log is durable.
func (l *Log) FlushedWhere() int64 { return l.q.FlushedWhere() }

// Recover finds the end of the log: from the start of the file holding
// from (or the first file), it reads unit after unit, calls visit for each
// whole one, and cuts the log at the first that is not. It returns the end.
func (l *Log) Recover(from int64, visit func(pos int64, u Unit)) (int64, error) {
	files := l.q.Files()
	if len(files) == 0 {
		return 0, nil
	}
	i := 0
	for j, f := range files {
		if f.From() <= from {
			i = j
		}
	}
	end := files[i].From()
	for ; i < len(files); i++ {
		f := files[i]
		s, ok := f.SliceFrom(0)
		if !ok {
			return end, fmt.Errorf("timer: recover %s: %w", f.Path(), mappedfile.ErrClosed)
		}
		b := s.Bytes()
		pos, full := 0, false
		for ; pos+minBlank <= len(b); pos += UnitSize {
			u, err := DecodeUnit(b[pos:])
			if errors.Is(err, errBlank) {
				full = true
				break
			}
			if err != nil {
				break
			}
			if visit != nil {
				visit(f.From()+int64(pos), u)
			}
		}
		s.Release()
		if !full {
			end = f.From() + int64(pos)
			break
		}
		end = f.From() + int64(f.Size())
	}
	if err := l.q.Truncate(end); err != nil {
		return end, fmt.Errorf("timer: cut the log at %d: %w", end, err)
	}
	if f := l.q.Last(); f != nil && f.From() <= end && end <= f.From()+int64(f.Size()) {
		f.SetPosition(int(end - f.From()))
	}
	l.q.SetFlushedWhere(end)
	return end, nil
}

// Append writes u at the end of the log and returns its offset. When the
// last file has no room for it and a blank tail, the file is closed with a
// blank tail and u goes to the next one.
func (l *Log) Append(u Unit) (int64, error) {
	f, err := l.q.LastOrCreate(0)
	if err != nil {
		return -1, fmt.Errorf("timer: append: %w", err)
	}
	w := f.Writable()
	if len(w) < UnitSize+minBlank {
		be.PutUint64(w[4:], 0)
		be.PutUint32(w[12:], BlankMagic)
		be.PutUint32(w, uint32(len(w)))
		f.Advance(len(w))
		if f, err = l.q.LastOrCreate(0); err != nil {
			return -1, fmt.Errorf("timer: append: %w", err)
		}
		w = f.Writable()
	}
	pos := f.From() + int64(f.WrotePosition())
	u.Encode(w[:UnitSize])
	// The size field is written last and on its own: a unit whose size
	// reads right is whole, even after a crash in the middle of Encode.
	storeSize(w)
	f.Advance(UnitSize)
	return pos, nil
}

// storeSize writes the size field again with one 4-byte store, ordered
// after the rest of the unit.
func storeSize(w []byte) {
	var v uint32
	be.PutUint32((*[4]byte)(unsafe.Pointer(&v))[:], UnitSize)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&w[0])), v)
}

// Read returns the unit at pos.
func (l *Log) Read(pos int64) (Unit, error) {
	f := l.q.FindByOffset(pos)
	if f == nil {
		return Unit{}, fmt.Errorf("timer: unit at %d: no such file: %w", pos, ErrCorrupt)
	}
	s, ok := f.Slice(int(pos-f.From()), UnitSize)
	if !ok {
		return Unit{}, fmt.Errorf("timer: unit at %d: past the end: %w", pos, ErrCorrupt)
	}
	defer s.Release()
	u, err := DecodeUnit(s.Bytes())
	if err != nil {
		return Unit{}, fmt.Errorf("timer: unit at %d: %w", pos, err)
	}
	return u, nil
}

// Units calls fn for every whole unit of the file that starts at from,
// until fn returns false.
func (l *Log) Units(from int64, fn func(pos int64, u Unit) bool) error {
	f := l.q.FindByOffset(from)
	if f == nil || f.From() != from {
		return fmt.Errorf("timer: no log file at %d", from)
	}
	s, ok := f.SliceFrom(0)
	if !ok {
		return fmt.Errorf("timer: log file at %d: %w", from, mappedfile.ErrClosed)
	}
	defer s.Release()
	b := s.Bytes()
	for pos := 0; pos+minBlank <= len(b); pos += UnitSize {
		u, err := DecodeUnit(b[pos:])
		if err != nil || !fn(f.From()+int64(pos), u) {
			return nil
		}
	}
	return nil
}

// Files lists the start offsets of the log's files.
func (l *Log) Files() []int64 {
	var out []int64
	for _, f := range l.q.Files() {
		out = append(out, f.From())
	}
	return out
}

// DeleteHead deletes files from the head, never the last, while del says
// so of a file's start offset; it returns how many it deleted.
func (l *Log) DeleteHead(del func(from int64) bool) (int, error) {
	return l.q.DeleteHead(func(f *mappedfile.File) bool { return del(f.From()) }, 0)
}

// Flush makes the log durable.
func (l *Log) Flush() error {
	_, err := l.q.Flush(0)
	return err
}

// Close closes the files; it does not flush.
func (l *Log) Close() error { return l.q.Close() }

// JavaHash is Java's String.hashCode of s, as TimerLog keeps for the real
// topic (hashTopicForMetrics): over UTF-16 code units.
func JavaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
