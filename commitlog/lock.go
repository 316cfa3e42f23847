package commitlog

import (
	"runtime"
	"sync"
)

// putLock serialises appends (RocketMQ's PutMessageLock): a spin lock or a
// mutex, chosen at Open. Both take the same sync.Mutex; the spin lock only
// ever tries it, yielding the processor between tries, and never sleeps
// on it. Unlock inlines into Append; the uncontended path is one
// compare-and-swap and one add.
type putLock struct {
	mu   sync.Mutex
	spin bool
}

func newPutLock(kind PutLock) *putLock { return &putLock{spin: kind == PutLockSpin} }

// Lock takes the lock.
func (l *putLock) Lock() {
	if l.spin {
		l.lockSpin()
		return
	}
	l.mu.Lock()
}

func (l *putLock) lockSpin() {
	for !l.mu.TryLock() {
		runtime.Gosched() // a holder preempted on a busy machine can finish
	}
}

// Unlock releases the lock.
func (l *putLock) Unlock() { l.mu.Unlock() }
