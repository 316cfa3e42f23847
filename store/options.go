package store

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/consumequeue"
	"github.com/rocketstore/rocketstore/indexfile"
	"github.com/rocketstore/rocketstore/mappedfile"
)

// FlushDiskType says when a put counts as stored (flushDiskType).
type FlushDiskType int

const (
	// AsyncFlush acknowledges puts once written; a background service
	// flushes every 500 ms (ASYNC_FLUSH, the default).
	AsyncFlush FlushDiskType = iota
	// SyncFlush acknowledges a put once it is flushed to disk, grouping
	// concurrent puts into one flush (SYNC_FLUSH).
	SyncFlush
)

// Options configure a MessageStore. The zero value works and gives
// RocketMQ's defaults.
type Options struct {
	// CommitLogFileSize is the size of each CommitLog file; 0 means 1 GiB.
	CommitLogFileSize int
	// ConsumeQueueFileUnits is the number of units per ConsumeQueue file; 0 means 300,000.
	ConsumeQueueFileUnits int
	// MaxMappedConsumeQueueFiles bounds how many ConsumeQueue files are
	// mapped at once (broker.conf maxMappedConsumeQueueFiles, our own key):
	// past it, the least recently used files no one reads or writes are
	// unmapped, to be mapped again at their next use, so that 100,000
	// queues fit under a stock vm.max_map_count (65,530). 0 means
	// DefaultMaxMappedConsumeQueueFiles; -1 means no bound (every file
	// mapped while open, as RocketMQ does).
	MaxMappedConsumeQueueFiles int
	// IndexHashSlots and IndexMaxEntries size each IndexFile; 0 means 5,000,000 and 20,000,000.
	IndexHashSlots, IndexMaxEntries int
	// DisableIndex turns off the IndexFile (messageIndexEnable=false).
	DisableIndex bool
	// MaxMessageSize bounds a message body; 0 means 4 MiB.
	MaxMessageSize int
	// PutLock is the kind of lock appends take.
	PutLock commitlog.PutLock
	// FlushDiskType is AsyncFlush (default) or SyncFlush.
	FlushDiskType FlushDiskType
	// SyncFlushTimeout bounds a sync put's wait for its flush; 0 means 5 s.
	SyncFlushTimeout time.Duration
	// TransientStorePool makes appends go to off-heap pool buffers first,
	// committed to the files every 200 ms (transientStorePoolEnable).
	TransientStorePool bool
	// RepairCommitLog lets Open get past a corrupt record in the middle of
	// the CommitLog, which otherwise makes Open fail with an error wrapping
	// commitlog.ErrCorrupt that names the file and offset, and changes
	// nothing. With it, the damaged file and every later one are renamed
	// aside (name.damaged-<UTC time>, in the commitlog folder; never
	// deleted) and the store opens with the records before the damage; the
	// ConsumeQueue units and index entries of the records moved aside are
	// dropped. Turn it on for one start, after keeping a copy of the store.
	RepairCommitLog bool
	// Mapper maps every file of the store; nil means mmap. Tests use it to
	// simulate a power loss.
	Mapper mappedfile.Mapper
	// StoreHost is stamped into every record; the zero value means 127.0.0.1:10911.
	StoreHost netip.AddrPort
	// MaxTransferBytes and MaxTransferCount bound one GetMessage answer for
	// messages in memory; 0 means 256 KiB and 32 (maxTransferBytesOnMessageInMemory).
	MaxTransferBytes, MaxTransferCount int
	// FileReservedTime is how long CommitLog files are kept; 0 means 72 h.
	FileReservedTime time.Duration
	// DeleteWhen lists the hours (local time, "04;16") when expired files
	// are deleted; "" means "04".
	DeleteWhen string
	// DiskMaxUsedSpaceRatio is the disk use, in percent, above which expired
	// files are deleted at once instead of at DeleteWhen; 0 means 75.
	DiskMaxUsedSpaceRatio int
	// DiskSpaceCleanForciblyRatio is the disk use above which even files not
	// yet expired (and not yet consumed) are deleted, oldest first, unless
	// KeepUnexpiredFiles; 0 means 85.
	DiskSpaceCleanForciblyRatio int
	// KeepUnexpiredFiles turns off the deletion of files not yet expired
	// above DiskSpaceCleanForciblyRatio (cleanFileForciblyEnable=false):
	// then only expired files are deleted, and a full disk stays full.
	KeepUnexpiredFiles bool
	// DiskSpaceWarningLevelRatio is the disk use above which puts are
	// refused with ErrDiskFull (reads go on); 0 means 90.
	DiskSpaceWarningLevelRatio int
	// CleanResourceInterval is how often expiry runs; 0 means 10 s.
	CleanResourceInterval time.Duration
	// DiskUsage returns the used fraction (0..1) of the disk holding dir;
	// nil means statfs.
	DiskUsage func(dir string) (float64, error)
	// MessageDelayLevel lists the delays of levels 1, 2, ... (ms, s, m, h,
	// d units); "" means DefaultMessageDelayLevel (1s 5s 10s ... 2h).
	MessageDelayLevel string
	// Replica makes the store a slave's (brokerRole=SLAVE): its CommitLog
	// grows only by AppendReplica, puts are refused with ErrReplica, and
	// delayed messages are not delivered (the master delivers them, and
	// the slave gets the records).
	Replica bool
	// AccessMessageInMemoryMaxRatio is the percentage of physical memory
	// that counts as holding the newest CommitLog bytes
	// (accessMessageInMemoryMaxRatio): a read further behind than that is
	// "in disk" (smaller batches, and GetResult.SuggestPullingFromSlave).
	// 0 means 40.
	AccessMessageInMemoryMaxRatio int
	// TotalPhysicalMemory is the memory that ratio is of, in bytes; 0 means
	// the machine's (StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE).
	TotalPhysicalMemory int64
	// DisableTimerWheel refuses timer messages (timerWheelEnable=false).
	DisableTimerWheel bool
	// TimerPrecisionMs is the length of a timer slot (timerPrecisionMs),
	// rounded down to 100, 200, 500 or 1000; 0 means 1000.
	TimerPrecisionMs int
	// TimerMaxDelaySec is the furthest a timer may be set ahead
	// (timerMaxDelaySec); 0 means 3 days.
	TimerMaxDelaySec int
	// TimerRollWindowSlot is how many slots ahead a timer goes into the
	// wheel; one further waits a round in rmq_sys_wheel_timer first
	// (timerRollWindowSlot); 0 means 2 days of seconds.
	TimerRollWindowSlot int
	// TimerLogFileSize is the size of each timerlog file
	// (mappedFileSizeTimerLog); 0 means 100 MiB.
	TimerLogFileSize int
	// TimerFlushInterval is how often the timer files and timercheck are
	// flushed (timerFlushIntervalMs); 0 means 1 s.
	TimerFlushInterval time.Duration
	// Paths places the CommitLog, ConsumeQueues, index, checkpoint and
	// abort marker outside the root folder; the zero value keeps them all
	// under it.
	Paths Paths
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

// DefaultMaxMappedConsumeQueueFiles is the default mapping budget of the
// ConsumeQueues: under half of a stock vm.max_map_count (65,530), leaving
// the rest to the CommitLog, index and timer files, the Go runtime and
// whatever else the process maps. A ConsumeQueue file keeps no fd.
const DefaultMaxMappedConsumeQueueFiles = 30_000

func (o Options) withDefaults() Options {
	if o.MaxMappedConsumeQueueFiles == 0 {
		o.MaxMappedConsumeQueueFiles = DefaultMaxMappedConsumeQueueFiles
	}
	if !o.StoreHost.IsValid() {
		o.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	}
	if o.ConsumeQueueFileUnits == 0 {
		o.ConsumeQueueFileUnits = consumequeue.DefaultFileUnits
	}
	if o.FileReservedTime == 0 {
		o.FileReservedTime = 72 * time.Hour
	}
	if o.DeleteWhen == "" {
		o.DeleteWhen = "04"
	}
	if o.DiskMaxUsedSpaceRatio == 0 {
		o.DiskMaxUsedSpaceRatio = 75
	}
	if o.DiskSpaceCleanForciblyRatio == 0 {
		o.DiskSpaceCleanForciblyRatio = 85
	}
	if o.DiskSpaceWarningLevelRatio == 0 {
		o.DiskSpaceWarningLevelRatio = 90
	}
	if o.CleanResourceInterval == 0 {
		o.CleanResourceInterval = 10 * time.Second
	}
	if o.DiskUsage == nil {
		o.DiskUsage = statfsUsage
	}
	if o.MaxTransferBytes == 0 {
		o.MaxTransferBytes = 256 << 10
	}
	if o.MessageDelayLevel == "" {
		o.MessageDelayLevel = DefaultMessageDelayLevel
	}
	if o.MaxTransferCount == 0 {
		o.MaxTransferCount = 32
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.timerDefaults()
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.MaxTransferBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxTransferBytes %d is negative", o.MaxTransferBytes))
	}
	// RocketMQ clamps these ratios; we refuse what is out of range.
	for _, r := range []struct {
		name      string
		v, lo, hi int
	}{
		{"DiskMaxUsedSpaceRatio", o.DiskMaxUsedSpaceRatio, 10, 95},
		{"DiskSpaceCleanForciblyRatio", o.DiskSpaceCleanForciblyRatio, 30, 85},
		{"DiskSpaceWarningLevelRatio", o.DiskSpaceWarningLevelRatio, 35, 90},
	} {
		if r.v < r.lo || r.v > r.hi {
			errs = append(errs, fmt.Errorf("%s %d is outside [%d, %d]", r.name, r.v, r.lo, r.hi))
		}
	}
	if _, err := parseDelayLevels(o.MessageDelayLevel); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseDeleteWhen(o.DeleteWhen); err != nil {
		errs = append(errs, err)
	}
	if o.FlushDiskType != AsyncFlush && o.FlushDiskType != SyncFlush {
		errs = append(errs, fmt.Errorf("FlushDiskType %d is unknown", o.FlushDiskType))
	}
	if o.MaxMappedConsumeQueueFiles < -1 {
		errs = append(errs, fmt.Errorf("MaxMappedConsumeQueueFiles %d must be positive, or -1 for no bound", o.MaxMappedConsumeQueueFiles))
	}
	if o.MaxTransferCount < 0 {
		errs = append(errs, fmt.Errorf("MaxTransferCount %d is negative", o.MaxTransferCount))
	}
	errs = append(errs, o.validateTimer(), o.Paths.validate())
	return errors.Join(errs...)
}

func (o Options) commitLog() commitlog.Options {
	return commitlog.Options{
		FileSize:           o.CommitLogFileSize,
		MaxMessageSize:     o.MaxMessageSize,
		PutLock:            o.PutLock,
		StoreHost:          o.StoreHost,
		TransientStorePool: o.TransientStorePool,
		ExternalRecovery:   true, // recover runs it from the checkpoint
		Repair:             o.RepairCommitLog,
		SmallPages:         o.FlushDiskType == SyncFlush,
		Mapper:             o.Mapper,
		Now:                o.Now,
		Logger:             o.Logger,
	}
}

func (o Options) consumeQueue() consumequeue.Options {
	return consumequeue.Options{FileUnits: o.ConsumeQueueFileUnits, Mapper: o.Mapper,
		MaxMappedFiles: max(o.MaxMappedConsumeQueueFiles, 0), Logger: o.Logger}
}

func (o Options) index() indexfile.Options {
	return indexfile.Options{HashSlots: o.IndexHashSlots, MaxIndexes: o.IndexMaxEntries, Mapper: o.Mapper, Now: o.Now, Logger: o.Logger}
}
