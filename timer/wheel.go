package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rocketstore/rocketstore/mappedfile"
)

var be = binary.BigEndian

// Wheel sizes (TimerMessageStore.TIMER_WHEEL_TTL_DAY, Slot.SIZE): the wheel
// holds 2 × SlotsTotal slots whatever the precision.
const (
	SlotsTotal = 7 * 24 * 3600
	SlotSize   = 32
	WheelSize  = 2 * SlotsTotal * SlotSize // 38,707,200 bytes
)

// ErrBadWheel reports a timerwheel file of the wrong length.
var ErrBadWheel = errors.New("timer: timerwheel has the wrong size")

// Slot is one slot of the wheel (Slot.java). A slot not holding the time
// asked for reads as empty: TimeMs, FirstPos and LastPos -1.
type Slot struct {
	TimeMs   int64 // the slot's time, a multiple of the precision
	FirstPos int64 // timer log offset of the slot's first unit
	LastPos  int64 // timer log offset of its newest unit: the chain starts here
	Num      int32 // units in the slot
	Magic    int32 // unused, kept
}

// Empty reports whether the slot holds nothing for its time.
func (s Slot) Empty() bool { return s.TimeMs == -1 }

var emptySlot = Slot{TimeMs: -1, FirstPos: -1, LastPos: -1}

// Wheel is the timerwheel file (TimerWheel.java), mapped. It writes
// straight into the mapping: a process crash keeps every write, and Flush
// makes them durable. One goroutine writes; it is not safe for concurrent
// writes.
type Wheel struct {
	path        string
	fd          *os.File
	region      mappedfile.Region
	b           []byte
	precisionMs int64
}

// OpenWheel maps the wheel at path, creating it (zeroed) if needed.
func OpenWheel(path string, precisionMs int, mapper mappedfile.Mapper) (*Wheel, error) {
	if precisionMs <= 0 {
		return nil, fmt.Errorf("timer: wheel precision %d ms must be positive", precisionMs)
	}
	if mapper == nil {
		mapper = mappedfile.MmapMapper{}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("timer: %w", err)
	}
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("timer: open wheel: %w", err)
	}
	st, err := fd.Stat()
	if err == nil {
		switch st.Size() {
		case 0:
			if err = mappedfile.Preallocate(fd, WheelSize); err != nil {
				// A full disk: leave the file empty, so the next try makes it.
				err = errors.Join(err, fd.Truncate(0))
			}
		case WheelSize:
		default:
			err = fmt.Errorf("%s is %d bytes, want %d; it is not a timerwheel: %w", path, st.Size(), WheelSize, ErrBadWheel)
		}
	}
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("timer: open wheel: %w", err)
	}
	r, err := mapper.Map(fd, WheelSize)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("timer: map wheel: %w", err)
	}
	return &Wheel{path: path, fd: fd, region: r, b: r.Bytes(), precisionMs: int64(precisionMs)}, nil
}

// PrecisionMs is the length of one slot in ms.
func (w *Wheel) PrecisionMs() int64 { return w.precisionMs }

// SpanMs is how far ahead the wheel reaches: 2 × SlotsTotal slots.
func (w *Wheel) SpanMs() int64 { return 2 * SlotsTotal * w.precisionMs }

func (w *Wheel) index(timeMs int64) int {
	i := timeMs / w.precisionMs % (2 * SlotsTotal)
	if i < 0 {
		i += 2 * SlotsTotal
	}
	return int(i) * SlotSize
}

// Raw is the slot where timeMs falls, whatever time it holds.
func (w *Wheel) Raw(timeMs int64) Slot {
	p := w.b[w.index(timeMs):][:SlotSize]
	return Slot{
		TimeMs:   int64(be.Uint64(p)) * w.precisionMs,
		FirstPos: int64(be.Uint64(p[8:])),
		LastPos:  int64(be.Uint64(p[16:])),
		Num:      int32(be.Uint32(p[24:])),
		Magic:    int32(be.Uint32(p[28:])),
	}
}

// Slot is the slot of timeMs (getSlot): empty unless it holds that time.
func (w *Wheel) Slot(timeMs int64) Slot {
	s := w.Raw(timeMs)
	if s.TimeMs != timeMs/w.precisionMs*w.precisionMs {
		return emptySlot
	}
	return s
}

// Put writes s into the slot of s.TimeMs (putSlot). The time goes last, so
// a crash in the middle leaves either the old slot or a slot whose chain
// still starts at a unit of its time.
func (w *Wheel) Put(s Slot) {
	p := w.b[w.index(s.TimeMs):][:SlotSize]
	be.PutUint64(p[8:], uint64(s.FirstPos))
	be.PutUint32(p[24:], uint32(s.Num))
	be.PutUint32(p[28:], uint32(s.Magic))
	be.PutUint64(p[16:], uint64(s.LastPos))
	be.PutUint64(p, uint64(s.TimeMs/w.precisionMs))
}

// Clear empties the slot where timeMs falls.
func (w *Wheel) Clear(timeMs int64) {
	clear(w.b[w.index(timeMs):][:SlotSize])
}

// Pending counts the units of every slot from fromMs on, over the whole
// wheel (getAllNum).
func (w *Wheel) Pending(fromMs int64) int64 {
	from := fromMs / w.precisionMs * w.precisionMs
	var n int64
	for i := int64(0); i < 2*SlotsTotal; i++ {
		if s := w.Slot(from + i*w.precisionMs); !s.Empty() {
			n += int64(s.Num)
		}
	}
	return n
}

// Flush makes every write durable (msync).
func (w *Wheel) Flush() error {
	if err := w.region.Flush(0, WheelSize); err != nil {
		return fmt.Errorf("timer: flush %s: %w", w.path, err)
	}
	return nil
}

// Close unmaps and closes the wheel; it does not flush.
func (w *Wheel) Close() error {
	err := errors.Join(w.region.Close(), w.fd.Close())
	if err != nil {
		return fmt.Errorf("timer: close %s: %w", w.path, err)
	}
	return nil
}
