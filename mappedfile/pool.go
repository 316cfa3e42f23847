package mappedfile

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// TransientStorePool is a small pool of off-heap write buffers, each the size
// of one file (RocketMQ's TransientStorePool). A new File borrows one, takes
// its appends there, and Commit copies them into the mapping; the buffer goes
// back to the pool once the file is full and committed. Writers thus never
// touch page-cache pages that the kernel may be writing back.
type TransientStorePool struct {
	size int

	mu   sync.Mutex // guards free and all
	free [][]byte
	all  [][]byte
}

// NewTransientStorePool maps n anonymous buffers of size bytes and tries to
// lock them in memory (best effort: a failed mlock is not an error).
func NewTransientStorePool(n, size int) (*TransientStorePool, error) {
	if n <= 0 || size <= 0 {
		return nil, fmt.Errorf("mappedfile: pool of %d buffers of %d bytes: both must be positive", n, size)
	}
	p := &TransientStorePool{size: size}
	for range n {
		b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("mappedfile: pool buffer of %d bytes: %w", size, err), p.Close())
		}
		_ = unix.Mlock(b) // best effort, as RocketMQ: RLIMIT_MEMLOCK is often small
		p.all = append(p.all, b)
		p.free = append(p.free, b)
	}
	return p, nil
}

// BufferSize is the size of each buffer.
func (p *TransientStorePool) BufferSize() int { return p.size }

// Available is how many buffers are free.
func (p *TransientStorePool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// borrow takes a free buffer, or returns nil when none is free.
func (p *TransientStorePool) borrow() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return nil
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return b
}

// giveBack returns a buffer to the pool.
func (p *TransientStorePool) giveBack(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b[:cap(b)])
}

// Close unmaps every buffer. Files that still hold a buffer must be closed
// first.
func (p *TransientStorePool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) != len(p.all) {
		return fmt.Errorf("mappedfile: pool closed with %d of %d buffers still lent", len(p.all)-len(p.free), len(p.all))
	}
	var err error
	for _, b := range p.all {
		err = errors.Join(err, unix.Munmap(b))
	}
	p.all, p.free = nil, nil
	return err
}
