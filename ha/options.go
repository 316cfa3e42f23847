package ha

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// RocketMQ's defaults (MessageStoreConfig).
const (
	DefaultHeartbeatInterval    = 5 * time.Second  // haSendHeartbeatInterval
	DefaultHousekeepingInterval = 20 * time.Second // haHousekeepingInterval
	DefaultReconnectInterval    = 5 * time.Second  // DefaultHAClient's wait after a failed connect
	DefaultTransferBatchSize    = 32 << 10         // haTransferBatchSize
	DefaultMaxGapNotInSync      = 256 << 20        // haMaxGapNotInSync
	DefaultSlaveTimeout         = 3 * time.Second  // slaveTimeout
	dialTimeout                 = 3 * time.Second  // RemotingHelper.connect's
)

// Options configure a Master or a Slave. The zero value works and gives
// RocketMQ's defaults.
type Options struct {
	// HeartbeatInterval is how long a side may send nothing before it sends
	// a heartbeat (a slave: its offset; a master: an empty frame); 0 means 5 s.
	HeartbeatInterval time.Duration
	// HousekeepingInterval is how long a connection may bring nothing
	// before it is closed; 0 means 20 s.
	HousekeepingInterval time.Duration
	// ReconnectInterval is how long a slave waits before it connects
	// again; 0 means 5 s.
	ReconnectInterval time.Duration
	// TransferBatchSize bounds the body of one frame; 0 means 32 KiB.
	TransferBatchSize int
	// MaxGapNotInSync is how far (bytes) a slave may be behind and still
	// count as in sync for a SYNC_MASTER's puts; 0 means 256 MiB.
	MaxGapNotInSync int64
	// SlaveTimeout bounds a SYNC_MASTER put's wait for its slave; 0 means 3 s.
	SlaveTimeout time.Duration
	// InSyncReplicas is how many copies a SYNC_MASTER's put must be on,
	// the master counted, before it is acknowledged (inSyncReplicas, as
	// Apache RocketMQ 5 reads it); an ASYNC_MASTER ignores it.
	//   - 0, unset, keeps RocketMQ 4.x's SYNC_MASTER: a put waits for one
	//     slave, SlaveNotAvailable at once when none is connected or it is
	//     MaxGapNotInSync behind (nothing acknowledged is only on the master).
	//   - 1 acknowledges a put without waiting for any slave (Apache 5's
	//     default; a broker.conf's inSyncReplicas=0 means the same).
	//   - N ≥ 2 waits until N-1 connected slaves have acknowledged the put's
	//     end, up to SlaveTimeout, else FlushSlaveTimeout; Apache 5 answers
	//     no SlaveNotAvailable here, so neither do we.
	InSyncReplicas int
	// Logger receives connection changes; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.HousekeepingInterval == 0 {
		o.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if o.ReconnectInterval == 0 {
		o.ReconnectInterval = DefaultReconnectInterval
	}
	if o.TransferBatchSize == 0 {
		o.TransferBatchSize = DefaultTransferBatchSize
	}
	if o.MaxGapNotInSync == 0 {
		o.MaxGapNotInSync = DefaultMaxGapNotInSync
	}
	if o.SlaveTimeout == 0 {
		o.SlaveTimeout = DefaultSlaveTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HeartbeatInterval", o.HeartbeatInterval},
		{"HousekeepingInterval", o.HousekeepingInterval},
		{"ReconnectInterval", o.ReconnectInterval},
		{"SlaveTimeout", o.SlaveTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, d.v))
		}
	}
	if o.TransferBatchSize < 0 || o.TransferBatchSize > maxFrameBody {
		errs = append(errs, fmt.Errorf("TransferBatchSize %d is outside 1..%d", o.TransferBatchSize, maxFrameBody))
	}
	if o.InSyncReplicas < 0 {
		errs = append(errs, fmt.Errorf("InSyncReplicas %d is negative", o.InSyncReplicas))
	}
	if o.MaxGapNotInSync < 0 {
		errs = append(errs, fmt.Errorf("MaxGapNotInSync %d is negative", o.MaxGapNotInSync))
	}
	if o.HousekeepingInterval > 0 && o.HeartbeatInterval >= o.HousekeepingInterval {
		errs = append(errs, fmt.Errorf("HeartbeatInterval %v must be below HousekeepingInterval %v", o.HeartbeatInterval, o.HousekeepingInterval))
	}
	return errors.Join(errs...)
}
