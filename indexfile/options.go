package indexfile

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// Sizes of the parts of an index file, in bytes (IndexHeader.INDEX_HEADER_SIZE,
// IndexFile.hashSlotSize, IndexFile.indexSize).
const (
	HeaderSize = 40
	SlotSize   = 4
	EntrySize  = 20
)

// Defaults of Options, as in RocketMQ's MessageStoreConfig.
const (
	// DefaultHashSlots is maxHashSlotNum.
	DefaultHashSlots = 5_000_000
	// DefaultMaxIndexes is maxIndexNum. Entry 0 is never used, so a file
	// holds DefaultMaxIndexes-1 entries.
	DefaultMaxIndexes = 20_000_000
	// DefaultMaxQueryNum is maxMsgsNumBatch, the cap on one query's results.
	DefaultMaxQueryNum = 64
)

// Errors returned by this package. Callers use errors.Is.
var (
	// ErrClosed is returned by a Service or File after Close.
	ErrClosed = errors.New("indexfile: closed")
	// ErrFull is returned by File.Put when the file holds its last entry.
	ErrFull = errors.New("indexfile: file is full")
	// ErrBadSize reports an index file whose length does not match
	// Options.HashSlots and Options.MaxIndexes.
	ErrBadSize = errors.New("indexfile: file has the wrong size")
	// ErrFault reports a memory fault (EIO, a file truncated under its
	// mapping) while reading or writing an index file.
	ErrFault = errors.New("indexfile: memory fault in the mapped file")
)

// Options configures a Service or a single File. The zero value works.
type Options struct {
	// HashSlots is the number of hash slots per file (maxHashSlotNum);
	// 0 means DefaultHashSlots.
	HashSlots int
	// MaxIndexes is the number of entry positions per file (maxIndexNum),
	// including the unused entry 0; 0 means DefaultMaxIndexes.
	MaxIndexes int
	// MaxQueryNum caps the results of one Query (maxMsgsNumBatch);
	// 0 means DefaultMaxQueryNum.
	MaxQueryNum int
	// Mapper maps the files; nil means mappedfile.MmapMapper with huge
	// pages: puts hit random hash slots, and a file is flushed whole only
	// when it is full or the store closes.
	Mapper mappedfile.Mapper
	// Logger receives state changes (files created, filled, dropped,
	// deleted); nil discards.
	Logger *slog.Logger
	// Now is the clock that names new files; nil means time.Now.
	Now func() time.Time
	// OnFileFull, if not nil, is called after a full file has been flushed
	// to disk, with the file's endTimestamp. The store saves it as the
	// checkpoint's indexMsgTimestamp. It is called from the Service's own
	// goroutine, one call at a time, in the order the files filled.
	OnFileFull func(endTimestamp int64)
}

// withDefaults returns a copy of o with zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.HashSlots == 0 {
		o.HashSlots = DefaultHashSlots
	}
	if o.MaxIndexes == 0 {
		o.MaxIndexes = DefaultMaxIndexes
	}
	if o.MaxQueryNum == 0 {
		o.MaxQueryNum = DefaultMaxQueryNum
	}
	if o.Mapper == nil {
		o.Mapper = mappedfile.MmapMapper{HugePages: true}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// validate reports every problem with o (after withDefaults).
func (o Options) validate() error {
	var errs []error
	if o.HashSlots < 1 {
		errs = append(errs, fmt.Errorf("HashSlots %d must be at least 1", o.HashSlots))
	}
	if o.MaxIndexes < 2 {
		errs = append(errs, fmt.Errorf("MaxIndexes %d must be at least 2 (entry 0 is never used)", o.MaxIndexes))
	}
	if o.MaxQueryNum < 0 {
		errs = append(errs, fmt.Errorf("MaxQueryNum %d must not be negative", o.MaxQueryNum))
	}
	// RocketMQ computes positions in a Java int: keep the file below 2 GiB.
	if o.HashSlots >= 1 && o.MaxIndexes >= 2 &&
		(o.HashSlots > math.MaxInt32/SlotSize || o.MaxIndexes > math.MaxInt32/EntrySize ||
			fileSize(o.HashSlots, o.MaxIndexes) > math.MaxInt32) {
		errs = append(errs, fmt.Errorf("HashSlots %d and MaxIndexes %d make a file over 2 GiB; lower them",
			o.HashSlots, o.MaxIndexes))
	}
	return errors.Join(errs...)
}

// fileSize is the length of an index file: 40 + slots×4 + indexes×20.
func fileSize(slots, indexes int) int {
	return HeaderSize + slots*SlotSize + indexes*EntrySize
}
