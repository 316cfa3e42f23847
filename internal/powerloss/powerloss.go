// Package powerloss is a mappedfile.Mapper that simulates a power loss, for
// crash tests. Its regions live in process memory and reach their files only
// when flushed, like dirty pages that only msync makes durable. At the
// crash, a random part of the pages written but not flushed reaches the
// files too, as the kernel's writeback might have done, and every later
// flush fails: what was acknowledged after a flush must be there after
// "reboot", and nothing else may be counted on.
package powerloss

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// ErrPowerLost is returned by flushes after the crash.
var ErrPowerLost = errors.New("powerloss: the power is out")

const pageSize = 4096

// Disk is a Mapper whose regions persist only what is flushed. It is safe
// for concurrent use.
type Disk struct {
	mu      sync.Mutex // guards everything below
	rng     *rand.Rand
	crashAt int // the flush that loses the power; < 0 for never
	flushes int
	dead    bool
}

// New returns a Disk whose power goes out at the crashAt-th flush (counting
// from 1; 0 or less means only when Crash is called). seed picks which
// unflushed pages survive.
func New(crashAt int, seed uint64) *Disk {
	return &Disk{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), crashAt: crashAt}
}

// Map implements mappedfile.Mapper.
func (d *Disk) Map(f *os.File, size int) (mappedfile.Region, error) {
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("powerloss: dup: %w", err)
	}
	file := os.NewFile(uintptr(fd), f.Name())
	buf := make([]byte, size)
	if _, err := file.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		file.Close()
		return nil, fmt.Errorf("powerloss: read %s: %w", f.Name(), err)
	}
	return &region{d: d, buf: buf, file: file}, nil
}

// Flushes is how many flushes have reached the disk.
func (d *Disk) Flushes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushes
}

// Dead reports whether the power is out.
func (d *Disk) Dead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

// Crash cuts the power now, if it is not out already. Close the store
// afterwards, then open it anew without this Disk: the reboot.
func (d *Disk) Crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashLocked()
}

func (d *Disk) crashLocked() { d.dead = true }

// writebackLocked writes a random half of r's pages that differ from its
// file: after the power went out, the kernel may or may not have written
// each dirty page. It runs when the region is closed, when no one writes
// its memory any more; pages written after the crash count as dirty too,
// which only widens the outcomes tested.
func (d *Disk) writebackLocked(r *region) {
	disk := make([]byte, pageSize)
	for off := 0; off < len(r.buf); off += pageSize {
		end := min(off+pageSize, len(r.buf))
		n, _ := r.file.ReadAt(disk[:end-off], int64(off))
		if bytes.Equal(disk[:n], r.buf[off:end]) || d.rng.IntN(2) == 0 {
			continue
		}
		r.file.WriteAt(r.buf[off:end], int64(off))
	}
}

type region struct {
	d      *Disk
	buf    []byte
	file   *os.File
	closed bool // guarded by d.mu
}

func (r *region) Bytes() []byte { return r.buf }

func (r *region) Flush(off, n int) error {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	if r.d.dead {
		return ErrPowerLost
	}
	r.d.flushes++
	if r.d.crashAt > 0 && r.d.flushes >= r.d.crashAt {
		r.d.crashLocked()
		return ErrPowerLost
	}
	// From the start of the first page, as msync; but only to the end of
	// the range: the writer may be filling the rest of the last page right
	// now. What the kernel might write of it, the random writeback at
	// close writes.
	start := off &^ (pageSize - 1)
	end := min(off+n, len(r.buf))
	if err := writeBack(r.file, r.buf[start:end], int64(start)); err != nil {
		return fmt.Errorf("powerloss: write back: %w", err)
	}
	return nil
}

// writeBack writes b at off in f as msync does: the kernel reads the pages
// while the program may be writing them (an index file's hash slots and
// header are written all the time, and flushed while they are), which is
// no race in a mapping, whose bytes only the kernel copies. A raw
// pwrite(2) does the same here, out of the race detector's sight, where
// os.File.WriteAt would report the copy as a race with the writer.
func writeBack(f *os.File, b []byte, off int64) error {
	for len(b) > 0 {
		n, _, errno := unix.Syscall6(unix.SYS_PWRITE64, f.Fd(), uintptr(unsafe.Pointer(unsafe.SliceData(b))),
			uintptr(len(b)), uintptr(off), 0, 0)
		if errno != 0 {
			return errno
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// Zero clears [off, off+n) in memory and on disk at once, as punching a hole
// in the file does.
func (r *region) Zero(off, n int) error {
	clear(r.buf[off : off+n])
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	if r.d.dead {
		return nil
	}
	_, err := r.file.WriteAt(r.buf[off:off+n], int64(off))
	return err
}

// Close writes back a random part of the dirty pages if the power is out
// (else they are lost with the mapping only at a crash, which Close is not).
func (r *region) Close() error {
	r.d.mu.Lock()
	r.closed = true
	if r.d.dead {
		r.d.writebackLocked(r)
	} else {
		r.file.WriteAt(r.buf, 0) // a clean unmap: the kernel writes everything back
	}
	r.d.mu.Unlock()
	return r.file.Close()
}
