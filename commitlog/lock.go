package commitlog

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// putLock serialises appends (RocketMQ's PutMessageLock): a mutex or a
// spin lock, chosen at Open. It is a struct rather than an interface so
// that the uncontended path inlines.
type putLock struct {
	spin    bool
	mu      sync.Mutex
	spinner spinLock
}

func (l *putLock) Lock() {
	if l.spin {
		l.spinner.Lock()
		return
	}
	l.mu.Lock()
}

func (l *putLock) Unlock() {
	if l.spin {
		l.spinner.Unlock()
		return
	}
	l.mu.Unlock()
}

// spinLock spins on a CAS, yielding the processor between tries so that a
// holder preempted on a busy machine can finish.
type spinLock struct{ held atomic.Bool }

func (l *spinLock) Lock() {
	for !l.held.CompareAndSwap(false, true) {
		runtime.Gosched()
	}
}

func (l *spinLock) Unlock() { l.held.Store(false) }
