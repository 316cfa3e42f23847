package commitlog

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// putLock serialises appends (RocketMQ's PutMessageLock): a spin lock or a
// mutex, chosen at Open. It is a struct rather than an interface so that
// the uncontended path inlines into Append.
type putLock struct {
	spin bool
	held atomic.Bool // the spin lock
	mu   sync.Mutex  // the mutex
}

func newPutLock(kind PutLock) *putLock { return &putLock{spin: kind == PutLockSpin} }

// Lock takes the lock. The spin lock spins on a CAS, yielding the processor
// between tries so that a holder preempted on a busy machine can finish.
func (l *putLock) Lock() {
	if l.spin {
		l.lockSpin()
		return
	}
	l.mu.Lock()
}

func (l *putLock) lockSpin() {
	for !l.held.CompareAndSwap(false, true) {
		runtime.Gosched()
	}
}

// Unlock releases the lock.
func (l *putLock) Unlock() {
	if l.spin {
		l.held.Store(false)
		return
	}
	l.mu.Unlock()
}
