package recovery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// CheckpointSize is the size of the checkpoint file.
const CheckpointSize = 4096

// Checkpoint is RocketMQ's StoreCheckpoint: a mapped 4096-byte file. It is
// safe for concurrent use.
type Checkpoint struct {
	mu     sync.Mutex // guards v, f and region
	f      *os.File
	region mappedfile.Region
	v      CheckpointValues
}

// CheckpointValues are the fields of the checkpoint file.
type CheckpointValues struct {
	PhysicMsgTimestamp  int64
	LogicsMsgTimestamp  int64
	IndexMsgTimestamp   int64
	MasterFlushedOffset int64
	ConfirmPhyOffset    int64
	// IndexMark is ours, not RocketMQ's: how far the newest index file
	// was on disk when the checkpoint was written. Zero when unknown (a
	// checkpoint RocketMQ wrote, or one whose mark did not reach the disk
	// whole).
	IndexMark IndexMark
}

// IndexMark names the state of an index file that was flushed whole
// before the checkpoint recorded it: after a crash, recovery rolls that
// file back to it (the entries below IndexCount are on disk, those after
// may not be) rather than drop the file, and indexes again only what came
// after. It lives at offset indexMarkOffset of the checkpoint file,
// beyond RocketMQ's 40 bytes (RocketMQ neither reads nor writes there),
// with a CRC, so that a torn or foreign one reads as none.
type IndexMark struct {
	File         int64 // the file's name (yyyyMMddHHmmssSSS) as a number; 0: no mark
	IndexCount   int32 // the header's indexCount then
	EndPhyOffset int64 // the header's endPhyOffset then
	EndTimestamp int64 // the header's endTimestamp then
}

// indexMarkOffset is where IndexMark is stored: in the checkpoint's first
// 512-byte sector, with RocketMQ's fields, but well past them.
const indexMarkOffset = 256

// indexMarkSize is the IndexMark's length: its four fields and a CRC32.
const indexMarkSize = 8 + 4 + 8 + 8 + 4

// MinTimestamp is where abnormal recovery may start: the older of the
// CommitLog and ConsumeQueue timestamps, less 3 s of margin, at least 0.
func (v CheckpointValues) MinTimestamp() int64 {
	return max(0, min(v.PhysicMsgTimestamp, v.LogicsMsgTimestamp)-3000)
}

// MinTimestampIndex also bounds MinTimestamp by the index timestamp, for
// stores that must not lose index entries (messageIndexSafe).
func (v CheckpointValues) MinTimestampIndex() int64 {
	return min(v.MinTimestamp(), v.IndexMsgTimestamp)
}

// OpenCheckpoint opens or creates the checkpoint file at path and maps it
// with m (nil: mmap). A new file reads as zeros.
func OpenCheckpoint(path string, m mappedfile.Mapper) (*Checkpoint, error) {
	if m == nil {
		m = mappedfile.MmapMapper{}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("recovery: checkpoint: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() < CheckpointSize {
		if err = mappedfile.Preallocate(f, CheckpointSize); err == nil {
			err = mappedfile.SyncDir(filepath.Dir(path))
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recovery: checkpoint %s: %w", path, err)
	}
	r, err := m.Map(f, CheckpointSize)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recovery: checkpoint: %w", err)
	}
	return &Checkpoint{f: f, region: r, v: decodeCheckpoint(r.Bytes())}, nil
}

// ReadCheckpoint reads the checkpoint file at path without changing it,
// even while a store has it open (for tools and tests). A file shorter
// than CheckpointSize reads as zeros where it ends.
func ReadCheckpoint(path string) (CheckpointValues, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return CheckpointValues{}, fmt.Errorf("recovery: read checkpoint: %w", err)
	}
	whole := make([]byte, CheckpointSize)
	copy(whole, b)
	return decodeCheckpoint(whole), nil
}

func decodeCheckpoint(b []byte) CheckpointValues {
	be := binary.BigEndian
	return CheckpointValues{
		PhysicMsgTimestamp:  int64(be.Uint64(b[0:])),
		LogicsMsgTimestamp:  int64(be.Uint64(b[8:])),
		IndexMsgTimestamp:   int64(be.Uint64(b[16:])),
		MasterFlushedOffset: int64(be.Uint64(b[24:])),
		ConfirmPhyOffset:    int64(be.Uint64(b[32:])),
		IndexMark:           decodeIndexMark(b[indexMarkOffset:][:indexMarkSize]),
	}
}

func decodeIndexMark(b []byte) IndexMark {
	be := binary.BigEndian
	if be.Uint32(b[28:]) != crc32.ChecksumIEEE(b[:28]) {
		return IndexMark{}
	}
	return IndexMark{
		File:         int64(be.Uint64(b[0:])),
		IndexCount:   int32(be.Uint32(b[8:])),
		EndPhyOffset: int64(be.Uint64(b[12:])),
		EndTimestamp: int64(be.Uint64(b[20:])),
	}
}

func encodeIndexMark(b []byte, m IndexMark) {
	if m == (IndexMark{}) {
		clear(b) // as RocketMQ leaves it
		return
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(m.File))
	be.PutUint32(b[8:], uint32(m.IndexCount))
	be.PutUint64(b[12:], uint64(m.EndPhyOffset))
	be.PutUint64(b[20:], uint64(m.EndTimestamp))
	be.PutUint32(b[28:], crc32.ChecksumIEEE(b[:28]))
}

func encodeCheckpoint(b []byte, v CheckpointValues) {
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(v.PhysicMsgTimestamp))
	be.PutUint64(b[8:], uint64(v.LogicsMsgTimestamp))
	be.PutUint64(b[16:], uint64(v.IndexMsgTimestamp))
	be.PutUint64(b[24:], uint64(v.MasterFlushedOffset))
	be.PutUint64(b[32:], uint64(v.ConfirmPhyOffset))
	encodeIndexMark(b[indexMarkOffset:][:indexMarkSize], v.IndexMark)
}

// Values returns the values held in memory.
func (c *Checkpoint) Values() CheckpointValues {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

// Update changes the values in memory with fn; Flush writes them.
func (c *Checkpoint) Update(fn func(*CheckpointValues)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(&c.v)
}

// Flush writes the values into the mapping and makes them durable.
func (c *Checkpoint) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return ErrClosed
	}
	encodeCheckpoint(c.region.Bytes(), c.v)
	if err := c.region.Flush(0, CheckpointSize); err != nil {
		return fmt.Errorf("recovery: flush checkpoint: %w", err)
	}
	return nil
}

// Close flushes and closes the file. Calls after the first return ErrClosed.
func (c *Checkpoint) Close() error {
	err := c.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return ErrClosed
	}
	err = errors.Join(err, c.region.Close(), c.f.Close())
	c.f = nil
	return err
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("recovery: closed")

// Abort is the abort marker of a store root.
type Abort struct{ path string }

// NewAbort names the abort file in dir.
func NewAbort(dir string) Abort { return AbortAt(filepath.Join(dir, "abort")) }

// AbortAt names the abort file path (RocketMQ's abortFile placed apart).
func AbortAt(path string) Abort { return Abort{path: path} }

// Exists reports whether the marker is there: the last run did not shut
// down cleanly.
func (a Abort) Exists() bool {
	_, err := os.Stat(a.path)
	return err == nil
}

// Create writes the marker with the process id, durably. On a full disk
// the marker is left empty (as RocketMQ's is): its being there is what
// counts.
func (a Abort) Create() error {
	err := os.WriteFile(a.path, fmt.Appendf(nil, "%d", os.Getpid()), 0o644)
	if errors.Is(err, syscall.ENOSPC) {
		if _, serr := os.Stat(a.path); serr == nil {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("recovery: create abort file: %w", err)
	}
	return mappedfile.SyncDir(filepath.Dir(a.path))
}

// Remove deletes the marker after a clean shutdown, durably.
func (a Abort) Remove() error {
	if err := os.Remove(a.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("recovery: remove abort file: %w", err)
	}
	return mappedfile.SyncDir(filepath.Dir(a.path))
}
