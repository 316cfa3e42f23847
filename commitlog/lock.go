package commitlog

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// putLock serialises appends (RocketMQ's PutMessageLock).
type putLock interface {
	Lock()
	Unlock()
}

func newPutLock(kind PutLock) putLock {
	if kind == PutLockSpin {
		return new(spinLock)
	}
	return new(sync.Mutex)
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
