package commitlog

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// Defaults, as RocketMQ's MessageStoreConfig.
const (
	DefaultFileSize       = 1 << 30 // mappedFileSizeCommitLog
	DefaultMaxMessageSize = 4 << 20 // maxMessageSize: the body limit
	DefaultPoolBuffers    = 5       // transientStorePoolSize
)

// PutLock selects the lock that serialises appends.
type PutLock int

const (
	// PutLockMutex is a sync.Mutex (useReentrantLockWhenPutMessage=true, the 5.x default).
	PutLockMutex PutLock = iota
	// PutLockSpin is a spin lock that yields to the scheduler while it waits
	// (RocketMQ's PutMessageSpinLock).
	PutLockSpin
)

// Options configure a Log. The zero value works.
type Options struct {
	// FileSize is the size of each CommitLog file; 0 means 1 GiB.
	FileSize int
	// MaxMessageSize bounds a message body in bytes; 0 means 4 MiB.
	MaxMessageSize int
	// PutLock is the kind of lock appends take.
	PutLock PutLock
	// StoreHost is stamped into every record: the broker's address and port.
	StoreHost netip.AddrPort
	// TransientStorePool makes appends go to off-heap pool buffers first;
	// Commit then copies them into the files (transientStorePoolEnable).
	TransientStorePool bool
	// PoolBuffers is the number of pool buffers; 0 means 5.
	PoolBuffers int
	// NoWarm turns off faulting in each new file before use. Warming is on by
	// default because a page fault on the put path costs several times the copy.
	NoWarm bool
	// SmallPages maps files with 4 KiB pages only. By default each file asks
	// for huge pages (2 MiB, where the kernel has transparent huge pages for
	// files), which copies need far fewer TLB misses for; but msync writes a
	// whole huge page back however little of it changed, so a log that
	// flushes every few records (sync flush) should set SmallPages.
	SmallPages bool
	// ExternalRecovery leaves recovery to the caller, who must call Recover
	// once before appending (the store does, from its checkpoint).
	ExternalRecovery bool
	// Repair lets recovery get past a corrupt record in the middle of the
	// log (a *CorruptionError otherwise): the damaged file and every later
	// one are renamed aside, never deleted, and the log opens with the
	// records before the damage (see Recover). Messages in the files moved
	// aside are no longer served; the files keep them for an operator.
	Repair bool
	// SkipCRCOnRecover skips the body CRC check when scanning at open
	// (checkCRCOnRecover=false).
	SkipCRCOnRecover bool
	// Mapper maps files; nil means mmap (with huge pages unless SmallPages).
	Mapper mappedfile.Mapper
	// Now is the clock for store timestamps; nil means time.Now.
	Now func() time.Time
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.FileSize == 0 {
		o.FileSize = DefaultFileSize
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.PoolBuffers == 0 {
		o.PoolBuffers = DefaultPoolBuffers
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// minFileSize keeps room for the largest record header and a blank record.
const minFileSize = 4096

func (o Options) validate() error {
	var errs []error
	if o.FileSize < minFileSize {
		errs = append(errs, fmt.Errorf("FileSize %d is below %d", o.FileSize, minFileSize))
	}
	if o.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("MaxMessageSize %d is negative", o.MaxMessageSize))
	}
	if o.PoolBuffers < 0 {
		errs = append(errs, fmt.Errorf("PoolBuffers %d is negative", o.PoolBuffers))
	}
	if o.PutLock != PutLockMutex && o.PutLock != PutLockSpin {
		errs = append(errs, fmt.Errorf("PutLock %d is unknown", o.PutLock))
	}
	return errors.Join(errs...)
}
