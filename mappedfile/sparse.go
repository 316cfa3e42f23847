package mappedfile

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// A sparse file (FileOptions.Sparse) is made at its full size as a hole
// (ftruncate), the way Apache RocketMQ makes its ConsumeQueue files, and
// its writer allocates disk ahead of itself in small steps (Reserve): a
// queue holding one unit costs one page of disk, not the whole file, and a
// full disk still fails as an error at allocation, never as SIGBUS on a
// write through the mapping. Holes read as zeros, which is how recovery
// finds the end of what was written.

// maxReserveStep bounds one step of Reserve: steps double from one page
// up to this, so a busy file pays one fallocate per 64 KiB written.
const maxReserveStep = 64 << 10

// withFD calls fn with a descriptor of the file: the one kept open if the
// mapper needed it, else one opened for the call (a mapped file keeps no
// fd: with 100,000 queues that would be 100,000 fds).
func (f *File) withFD(fn func(fd int) error) error {
	fd, opened, err := f.takeFD()
	if err != nil {
		return err
	}
	err = fn(fd)
	if opened {
		if cerr := unix.Close(fd); err == nil && cerr != nil {
			err = fmt.Errorf("mappedfile: close %s: %w", f.path, cerr)
		}
	}
	return err
}

// takeFD returns a descriptor of the file: the one kept (for the Mapper,
// or by OpenFD), or a new one the caller closes (opened).
func (f *File) takeFD() (fd int, opened bool, err error) {
	if f.fd != nil {
		return int(f.fd.Fd()), false, nil
	}
	if kept := f.keptFD.Load(); kept > 0 {
		return int(kept - 1), false, nil
	}
	fd, err = unix.Open(f.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, fmt.Errorf("mappedfile: open %s: %w", f.path, err)
	}
	return fd, true, nil
}

// OpenFD keeps an fd of the file open until CloseFD, for a run of
// ReadAt, WriteAt and NonZeroAfter calls on a file that is not mapped
// (recovery reads a few chunks of every queue): one open instead of one
// per call. Only the goroutine that owns the file then (the opener) may
// call it.
func (f *File) OpenFD() error {
	if f.fd != nil || f.keptFD.Load() > 0 {
		return nil
	}
	fd, err := unix.Open(f.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("mappedfile: open %s: %w", f.path, err)
	}
	f.keptFD.Store(int64(fd) + 1)
	return nil
}

// CloseFD closes the fd OpenFD kept.
func (f *File) CloseFD() error {
	kept := f.keptFD.Swap(0)
	if kept <= 0 {
		return nil
	}
	if err := unix.Close(int(kept - 1)); err != nil {
		return fmt.Errorf("mappedfile: close %s: %w", f.path, err)
	}
	return nil
}

// Sparse reports whether the file was made sparse (see FileOptions.Sparse).
func (f *File) Sparse() bool { return f.sparse }

// Reserve makes sure disk is allocated for the file's bytes up to end, so
// that writes through the mapping below end cannot fail for want of space:
// in steps of one page doubling up to 64 KiB, ahead of end. A file that is
// not sparse was allocated whole when created. A full disk gives an error
// wrapping unix.ENOSPC. Only the writer may call it.
func (f *File) Reserve(end int) error {
	if !f.sparse || end <= f.allocated {
		return nil
	}
	grow := min(max(f.allocated, pageSize), maxReserveStep)
	to := min(max((end+pageSize-1)&^(pageSize-1), f.allocated+grow), f.size)
	if end > f.size {
		return fmt.Errorf("mappedfile: reserve %s to %d: beyond its size %d", f.path, end, f.size)
	}
	err := f.withFD(func(fd int) error {
		err := unix.Fallocate(fd, 0, int64(f.allocated), int64(to-f.allocated))
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
			return nil // a filesystem without fallocate: best effort, as Preallocate
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mappedfile: allocate %s up to %d bytes (disk full?): %w", f.path, to, err)
	}
	f.allocated = to
	return nil
}

// punchTail gives the disk of the file from pos (a page boundary) to its
// end back to the filesystem; the bytes read as zeros from then on. A file
// that is not sparse gets the range allocated again, so that it stays
// whole on disk. It reports whether it could (a filesystem without hole
// punching cannot: then the caller writes the zeros).
func (f *File) punchTail(pos int) bool {
	if pos >= f.size {
		return true
	}
	err := f.withFD(func(fd int) error {
		err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(pos), int64(f.size-pos))
		if err == nil && !f.sparse {
			err = unix.Fallocate(fd, 0, int64(pos), int64(f.size-pos))
		}
		return err
	})
	if err != nil {
		return false
	}
	if f.sparse {
		f.allocated = min(f.allocated, pos)
	}
	return true
}

// NonZeroAfter reports whether any byte of the file at or after pos is not
// zero, reading only the parts of the file that hold data (SEEK_DATA,
// SEEK_HOLE): for a sparse file, in proportion to what was written, not to
// its size. Recovery uses it to tell the end of what was written from a
// hole torn into the middle of it.
func (f *File) NonZeroAfter(pos int) (bool, error) {
	if pos >= f.size {
		return false, nil
	}
	ranges, err := f.dataRanges(pos)
	if err != nil {
		return false, err
	}
	var buf [8 << 10]byte
	for _, r := range ranges {
		for off := r[0]; off < r[1]; {
			n, err := f.readRaw(buf[:min(len(buf), r[1]-off)], off)
			if err != nil {
				return false, err
			}
			if n == 0 {
				break
			}
			if slices.ContainsFunc(buf[:n], func(c byte) bool { return c != 0 }) {
				return true, nil
			}
			off += n
		}
	}
	return false, nil
}

// dataRanges lists the [start, end) ranges of the file at or after pos
// that are not holes. Where the filesystem cannot tell, the whole rest.
func (f *File) dataRanges(pos int) ([][2]int, error) {
	var ranges [][2]int
	err := f.withFD(func(fd int) error {
		for off := int64(pos); off < int64(f.size); {
			start, err := unix.Seek(fd, off, unix.SEEK_DATA)
			if errors.Is(err, unix.ENXIO) {
				return nil // no data after off
			}
			if err != nil {
				ranges = [][2]int{{pos, f.size}}
				return nil //nolint:nilerr // no SEEK_DATA here: read it all
			}
			end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
			if err != nil {
				end = int64(f.size)
			}
			start, end = max(start, int64(pos)), min(end, int64(f.size))
			if start < end {
				ranges = append(ranges, [2]int{int(start), int(end)})
			}
			off = max(end, start+1)
		}
		return nil
	})
	return ranges, err
}

// Preallocate reserves size bytes of disk for f, so that a full disk fails
// here and not as SIGBUS on a write through the mapping.
func Preallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size) // e.g. a filesystem without fallocate: best effort
	}
	return err
}

// markFlushed records bytes up to pos as durable (see Queue.MarkFlushed);
// their names too: a syncfs syncs folders as well.
func (f *File) markFlushed(pos int) {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	pos = min(pos, f.CommittedPosition())
	if int64(pos) > f.flushed.Load() {
		f.flushed.Store(int64(pos))
	}
	f.syncDir = nil
}

// SyncFS makes everything written to the filesystem holding dir durable
// (syncfs(2)): one call instead of one fsync per file, for a flush of
// thousands of files written through mmap(2) or pwrite(2) (not for a
// Mapper that keeps bytes in memory until Flush).
func SyncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("mappedfile: syncfs %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("mappedfile: syncfs %s: %w", dir, err)
	}
	return nil
}
