package mappedfile

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Region is the writable memory of one mapped file. The OS implementation is
// an mmap of the file; a crash double may keep only the bytes that were
// flushed, to simulate a power loss.
type Region interface {
	// Bytes is the writable view of the whole file. It stays valid until Close.
	Bytes() []byte
	// Flush makes bytes [off, off+n) durable (msync on the OS).
	Flush(off, n int) error
	// Close unmaps the region. Bytes must not be used afterwards.
	Close() error
}

// Mapper maps open files into memory. The zero Options use MmapMapper.
type Mapper interface {
	// Map maps the first size bytes of f, which is at least size long.
	Map(f *os.File, size int) (Region, error)
}

// MmapMapper maps files with mmap(2), shared and writable.
type MmapMapper struct {
	// HugePages asks for the file's pages in huge folios mapped 2 MiB at a
	// time (MADV_HUGEPAGE; best effort, THP for files may be off). Each first
	// write to a 4 KiB page of a fresh mapping costs a TLB miss (on a VM
	// with shadow paging, an exit to the hypervisor), and the page cache
	// only reaches large folios some 40 MiB into a file on its own: with
	// small pages the head of each new CommitLog file is written at a
	// twentieth of the speed of the rest. But msync writes a whole huge page
	// back however little of it is dirty, so leave it off for files flushed
	// every few records.
	HugePages bool
}

// Map implements Mapper.
func (m MmapMapper) Map(f *os.File, size int) (Region, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mappedfile: mmap %s (%d bytes): %w", f.Name(), size, err)
	}
	if m.HugePages {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	return &mmapRegion{b: b}, nil
}

type mmapRegion struct {
	b []byte
}

func (r *mmapRegion) Bytes() []byte { return r.b }

func (r *mmapRegion) Flush(off, n int) error {
	if n <= 0 {
		return nil
	}
	start := off &^ (pageSize - 1) // msync needs a page-aligned start
	if err := unix.Msync(r.b[start:off+n], unix.MS_SYNC); err != nil {
		return fmt.Errorf("mappedfile: msync: %w", err)
	}
	return nil
}

func (r *mmapRegion) Close() error {
	if r.b == nil {
		return errors.New("mappedfile: region already closed")
	}
	err := unix.Munmap(r.b)
	r.b = nil
	return err
}

// pageSize is the unit of flushing, warming and "least pages" accounting.
const pageSize = 4096
