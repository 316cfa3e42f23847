package timer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// CheckpointLen is the length of the fields Encode writes.
const CheckpointLen = 80

// checkpointSize is the mapped length of timercheck (one OS page, as
// TimerCheckpoint maps it).
const checkpointSize = 4096

// CheckpointValues are the fields of timercheck (TimerCheckpoint.java).
type CheckpointValues struct {
	// LastReadTimeMs is the next slot to deliver: every slot before it
	// was delivered.
	LastReadTimeMs int64
	// LastTimerLogFlushPos is the timer log offset up to which the log and
	// the wheel were durable.
	LastTimerLogFlushPos int64
	// LastTimerQueueOffset is the next rmq_sys_wheel_timer queue offset
	// to enqueue.
	LastTimerQueueOffset int64
	// MasterTimerQueueOffset is the master's LastTimerQueueOffset (equal
	// on a master).
	MasterTimerQueueOffset int64
	// DataVersion (stateVersion, timestamp, counter).
	StateVersion, Timestamp, Counter int64
	// DeliverFromOffset (rocketstore's own, @64) is a CommitLog offset
	// before every delivery of a slot from LastReadTimeMs on: after a crash,
	// the deliveries found past it are not made again. Valid only when
	// DeliverFromKnown (a checkpoint RocketMQ wrote has neither).
	DeliverFromOffset int64
	// DeliverFromKnown (@72, 1 when set) says DeliverFromOffset is valid.
	DeliverFromKnown bool
}

// Checkpoint is the timercheck file, mapped. Values are written to it only
// by Flush, after the log and wheel they describe are durable.
type Checkpoint struct {
	path   string
	fd     *os.File
	region mappedfile.Region
	b      []byte
}

// OpenCheckpoint maps the checkpoint at path, creating it if needed, and
// returns the values it holds (zero for a new file).
func OpenCheckpoint(path string, mapper mappedfile.Mapper) (*Checkpoint, CheckpointValues, error) {
	if mapper == nil {
		mapper = mappedfile.MmapMapper{}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, CheckpointValues{}, fmt.Errorf("timer: %w", err)
	}
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, CheckpointValues{}, fmt.Errorf("timer: open checkpoint: %w", err)
	}
	st, err := fd.Stat()
	if err == nil && st.Size() < checkpointSize {
		err = fd.Truncate(checkpointSize) // a shorter file reads as zeros past its end
	}
	if err != nil {
		fd.Close()
		return nil, CheckpointValues{}, fmt.Errorf("timer: open checkpoint: %w", err)
	}
	r, err := mapper.Map(fd, checkpointSize)
	if err != nil {
		fd.Close()
		return nil, CheckpointValues{}, fmt.Errorf("timer: map checkpoint: %w", err)
	}
	c := &Checkpoint{path: path, fd: fd, region: r, b: r.Bytes()}
	return c, DecodeCheckpoint(c.b), nil
}

// DecodeCheckpoint reads the values from a timercheck image; fields past
// the end of b read as zero (an older, shorter file).
func DecodeCheckpoint(b []byte) CheckpointValues {
	get := func(off int) int64 {
		if off+8 > len(b) {
			return 0
		}
		return int64(be.Uint64(b[off:]))
	}
	return CheckpointValues{
		LastReadTimeMs: get(0), LastTimerLogFlushPos: get(8), LastTimerQueueOffset: get(16),
		MasterTimerQueueOffset: get(24), StateVersion: get(32), Timestamp: get(40), Counter: get(48),
		DeliverFromOffset: get(64), DeliverFromKnown: get(72) == 1,
	}
}

// Encode writes v into a timercheck image of at least CheckpointLen bytes.
func (v CheckpointValues) Encode(b []byte) {
	known := int64(0)
	if v.DeliverFromKnown {
		known = 1
	}
	for i, x := range [...]int64{v.LastReadTimeMs, v.LastTimerLogFlushPos, v.LastTimerQueueOffset,
		v.MasterTimerQueueOffset, v.StateVersion, v.Timestamp, v.Counter, 0, v.DeliverFromOffset, known} {
		be.PutUint64(b[8*i:], uint64(x))
	}
}

// Flush writes v and makes it durable.
func (c *Checkpoint) Flush(v CheckpointValues) error {
	v.Encode(c.b)
	if err := c.region.Flush(0, checkpointSize); err != nil {
		return fmt.Errorf("timer: flush %s: %w", c.path, err)
	}
	return nil
}

// Close unmaps and closes the file; it does not flush.
func (c *Checkpoint) Close() error {
	if err := errors.Join(c.region.Close(), c.fd.Close()); err != nil {
		return fmt.Errorf("timer: close %s: %w", c.path, err)
	}
	return nil
}
