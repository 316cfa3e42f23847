package mappedfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CreateSparse makes a new file of size bytes at path that costs disk only
// as it fills, for files written in place far ahead of their use (index
// files: 420 MB at RocketMQ's default sizes). Like CreateWhole it is made
// as path + CreatingSuffix, synced, renamed and its folder synced, so a
// crash never leaves it half made under its name; but only its first head
// bytes are allocated, the rest is a hole. The owner must Allocate a range
// before it writes there: a write through the mapping into a hole on a
// full disk is a SIGBUS, an Allocate is an error. An existing file at path
// is an error. Its positions start at 0.
func CreateSparse(path string, size, head int, opts FileOptions) (*File, error) {
	if head < 0 || head > size {
		return nil, fmt.Errorf("mappedfile: create %s: head %d outside the file's %d bytes", path, head, size)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("mappedfile: create %s: %w", path, os.ErrExist)
	}
	tmp := path + CreatingSuffix
	fd, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mappedfile: create: %w", err)
	}
	named := tmp
	fail := func(err error) (*File, error) {
		fd.Close()
		os.Remove(named)
		return nil, err
	}
	if err := fd.Truncate(int64(size)); err != nil {
		return fail(fmt.Errorf("mappedfile: create %s: %w", path, err))
	}
	if err := allocate(int(fd.Fd()), 0, head); err != nil {
		return fail(fmt.Errorf("mappedfile: allocate the first %d bytes of %s (disk full?): %w", head, path, err))
	}
	if err := fd.Sync(); err != nil {
		return fail(fmt.Errorf("mappedfile: create %s: %w", path, err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("mappedfile: create: %w", err))
	}
	named = path
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fail(err)
	}
	f, err := mapFile(fd, path, 0, size, opts)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// Allocate reserves disk for bytes [off, off+n) of the file (fallocate
// without changing its size), so that writes there through the mapping
// cannot fault for want of space: on a full disk it fails with an error
// wrapping syscall.ENOSPC instead. Allocating a range already allocated
// costs no space. Where the filesystem cannot allocate ahead it does
// nothing (best effort, as Preallocate).
func (f *File) Allocate(off, n int) error {
	if off < 0 || n < 0 || off+n > f.size {
		return fmt.Errorf("mappedfile: allocate [%d, %d) of %s: outside the file's %d bytes", off, off+n, f.path, f.size)
	}
	if !f.Hold() {
		return ErrClosed
	}
	defer f.Release()
	if err := f.withFD(func(fd int) error { return allocate(fd, off, n) }); err != nil {
		return fmt.Errorf("mappedfile: allocate %d bytes of %s at %d (disk full?): %w", n, f.path, off, err)
	}
	return nil
}

// allocate is fallocate of [off, off+n) of fd, keeping its size; nothing
// where the filesystem has no fallocate.
func allocate(fd int, off, n int) error {
	if n == 0 {
		return nil
	}
	err := unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n))
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	return err
}
