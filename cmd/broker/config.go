package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/store"
)

// parseProperties reads a Java properties file as RocketMQ's broker.conf
// is written: key=value (or key: value) lines, # and ! comments.
func parseProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d: %q is not key=value", n, line)
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return props, sc.Err()
}

// applyProperties sets broker options from broker.conf keys; unknown keys
// are returned so the caller can warn about them.
func applyProperties(o *broker.Options, props map[string]string) (unknown []string, err error) {
	var errs []error
	num := func(k, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a number", k, v))
		}
		return n
	}
	boolean := func(k, v string) bool {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not true or false", k, v))
		}
		return b
	}
	ctlMode := controllerMode(props)
	for k, v := range props {
		switch k {
		case "brokerName":
			o.BrokerName = v
		case "brokerClusterName":
			o.ClusterName = v
		case "brokerId":
			o.BrokerID = num(k, v)
		case "listenPort":
			o.ListenAddr = net.JoinHostPort("", strconv.FormatInt(num(k, v), 10))
		case "namesrvAddr":
			o.NamesrvAddrs = splitAddrs(v)
		case "storePathRootDir":
			o.StoreDir = v
		case "storePathCommitLog":
			if strings.Contains(v, ",") {
				errs = append(errs, fmt.Errorf("storePathCommitLog=%q lists several folders (Apache's multi-path CommitLog), "+
					"which this broker does not spread files over; give one folder", v))
			}
			o.Store.Paths.CommitLog = v
		case "storePathConsumeQueue": // ours, as the next four: Apache derives them from storePathRootDir
			o.Store.Paths.ConsumeQueue = v
		case "storePathIndex":
			o.Store.Paths.Index = v
		case "storeCheckpoint":
			o.Store.Paths.Checkpoint = v
		case "abortFile":
			o.Store.Paths.Abort = v
		case "storePathEpochFile", "storePathBrokerIdentity":
			if ctlMode {
				continue // read by readControllerConfig
			}
			fallthrough
		case "storePathDLedgerCommitLog", "readOnlyCommitLogStorePaths":
			if v != "" {
				errs = append(errs, fmt.Errorf("%s=%q: %s; this broker would keep or look for that data elsewhere, "+
					"so it refuses to start: remove the key", k, v, refusedPathKeys[k]))
			}
		case "brokerIP1":
			o.BrokerIP1 = v
		case "autoCreateTopicEnable":
			o.DisableAutoCreateTopic = !boolean(k, v)
		case "defaultTopicQueueNums":
			o.DefaultTopicQueueNums = int(num(k, v))
		case "longPollingEnable":
			o.DisableLongPolling = !boolean(k, v)
		case "flushDiskType":
			switch v {
			case "ASYNC_FLUSH":
				o.Store.FlushDiskType = store.AsyncFlush
			case "SYNC_FLUSH":
				o.Store.FlushDiskType = store.SyncFlush
			default:
				errs = append(errs, fmt.Errorf("flushDiskType=%q: want ASYNC_FLUSH or SYNC_FLUSH", v))
			}
		case "brokerRole":
			r, err := ha.ParseRole(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("brokerRole=%q: want ASYNC_MASTER, SYNC_MASTER or SLAVE", v))
			}
			o.BrokerRole = r
		case "slaveReadEnable":
			o.SlaveReadEnable = boolean(k, v)
		case "accessMessageInMemoryMaxRatio":
			o.Store.AccessMessageInMemoryMaxRatio = int(num(k, v))
		case "haListenPort":
			o.HAListenPort = int(num(k, v))
		case "haMasterAddress":
			o.HAMasterAddress = v
		case "haSendHeartbeatInterval":
			o.HA.HeartbeatInterval = time.Duration(num(k, v)) * time.Millisecond
		case "haHousekeepingInterval":
			o.HA.HousekeepingInterval = time.Duration(num(k, v)) * time.Millisecond
		case "haTransferBatchSize":
			o.HA.TransferBatchSize = int(num(k, v))
		case "haMaxGapNotInSync":
			o.HA.MaxGapNotInSync = num(k, v)
		case "haReconnectInterval": // ours: a slave's wait before it connects again (RocketMQ: 5 s, fixed)
			o.HA.ReconnectInterval = time.Duration(num(k, v)) * time.Millisecond
		case "inSyncReplicas":
			switch n := num(k, v); {
			case n < 0:
				errs = append(errs, fmt.Errorf("inSyncReplicas=%q: want 1 (no slave waited for) or more", v))
			case n == 0: // Apache 5 waits for no slave at 0 as at 1; 0 in ha.Options means unset
				o.HA.InSyncReplicas = 1
			default:
				o.HA.InSyncReplicas = int(n)
			}
		case "minInSyncReplicas":
			num(k, v) // checked, not applied: see inertKeys
			unknown = append(unknown, k)
		case "enableAutoInSyncReplicas":
			boolean(k, v)
			unknown = append(unknown, k)
		case "slaveTimeout":
			o.HA.SlaveTimeout = time.Duration(num(k, v)) * time.Millisecond
		case "mappedFileSizeCommitLog":
			o.Store.CommitLogFileSize = int(num(k, v))
		case "mappedFileSizeConsumeQueue":
			o.Store.ConsumeQueueFileUnits = int(num(k, v) / 20)
		case "maxMappedConsumeQueueFiles": // ours: see store.Options.MaxMappedConsumeQueueFiles
			o.Store.MaxMappedConsumeQueueFiles = int(num(k, v))
		case "maxMessageSize":
			o.Store.MaxMessageSize = int(num(k, v))
		case "fileReservedTime":
			o.Store.FileReservedTime = time.Duration(num(k, v)) * time.Hour
		case "deleteWhen":
			o.Store.DeleteWhen = v
		case "cleanFileForciblyEnable":
			o.Store.KeepUnexpiredFiles = !boolean(k, v)
		case "diskMaxUsedSpaceRatio":
			o.Store.DiskMaxUsedSpaceRatio = int(num(k, v))
		case "syncFlushTimeout":
			o.Store.SyncFlushTimeout = time.Duration(num(k, v)) * time.Millisecond
		case "transientStorePoolEnable":
			o.Store.TransientStorePool = boolean(k, v)
		case "messageDelayLevel":
			o.Store.MessageDelayLevel = v
		case "transactionCheckMax":
			o.TransactionCheckMax = int(num(k, v))
		case "transactionCheckInterval":
			o.TransactionCheckInterval = time.Duration(num(k, v)) * time.Millisecond
		case "transactionTimeOut":
			o.TransactionTimeout = time.Duration(num(k, v)) * time.Millisecond
		case "litePullMessageEnable":
			o.DisableLitePullMessage = !boolean(k, v)
		case "grpcServerPort":
			o.GRPCServerPort = int(num(k, v))
		case "enablePropertyFilter":
			o.DisablePropertyFilter = !boolean(k, v)
		case "transferMsgByHeap":
			o.TransferMsgByHeap = boolean(k, v)
		case "repairCommitLog": // ours: see store.Options.RepairCommitLog
			o.Store.RepairCommitLog = boolean(k, v)
		case "messageIndexEnable":
			o.Store.DisableIndex = !boolean(k, v)
		case "maxHashSlotNum":
			o.Store.IndexHashSlots = int(num(k, v))
		case "maxIndexNum":
			o.Store.IndexMaxEntries = int(num(k, v))
		case "traceTopicEnable":
			o.TraceTopicEnable = boolean(k, v)
		case "msgTraceTopicName":
			o.MsgTraceTopicName = v
		case "timerWheelEnable":
			o.Store.DisableTimerWheel = !boolean(k, v)
		case "timerPrecisionMs":
			o.Store.TimerPrecisionMs = int(num(k, v))
		case "timerMaxDelaySec":
			o.Store.TimerMaxDelaySec = int(num(k, v))
		case "timerRollWindowSlot":
			o.Store.TimerRollWindowSlot = int(num(k, v))
		case "mappedFileSizeTimerLog":
			o.Store.TimerLogFileSize = int(num(k, v))
		case "timerFlushIntervalMs":
			o.Store.TimerFlushInterval = time.Duration(num(k, v)) * time.Millisecond
		case "metricsExporterType":
			o.MetricsExporterType = v
		case "metricsPromExporterHost":
			o.MetricsPromExporterHost = v
		case "metricsPromExporterPort":
			o.MetricsPromExporterPort = int(num(k, v))
		case "metricsLabel":
			o.MetricsLabel = v
		case "metricsQueueSeriesLimit": // ours: see broker.Options.MetricsQueueSeriesLimit
			o.MetricsQueueSeriesLimit = int(num(k, v))
		case "forceRegister":
			o.DisableForceRegister = !boolean(k, v)
		case "compressedRegister":
			o.CompressedRegister = boolean(k, v)
		case "enableSplitRegistration":
			o.EnableSplitRegistration = boolean(k, v)
		case "splitRegistrationSize":
			o.SplitRegistrationSize = int(num(k, v))
		default:
			if ok, err := o.Auth.ApplyProperty(k, v); !ok {
				unknown = append(unknown, k)
			} else if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return unknown, errors.Join(errs...)
}

// inertKeys are broker.conf keys Apache RocketMQ 5 reads but applies only
// in modes rocketstore does not have; they are checked and not applied, as
// Apache 5 does not apply them outside those modes.
var inertKeys = map[string]string{
	"minInSyncReplicas":        "Apache RocketMQ 5 applies it only with enableSlaveActingMaster, which rocketstore does not have, or enableControllerMode with allAckInSyncStateSet=false, where rocketstore still waits for every SyncStateSet member",
	"enableAutoInSyncReplicas": "Apache RocketMQ 5 applies it only with enableSlaveActingMaster, which rocketstore does not have",
}

// refusedPathKeys are Apache's broker.conf keys that place data this
// broker does not keep where they say: a broker that took them for
// unknown keys would put the data, or look for it, somewhere the operator
// did not mean. Set to a value, each stops the broker at start.
var refusedPathKeys = map[string]string{
	"storePathDLedgerCommitLog":   "the DLedger CommitLog (enableDLegerCommitLog) is not supported",
	"readOnlyCommitLogStorePaths": "read-only CommitLog folders are not read",
	"storePathEpochFile":          "the epoch file is kept only with enableControllerMode=true",
	"storePathBrokerIdentity":     "the broker identity file is kept only with enableControllerMode=true",
}

// splitAddrs splits RocketMQ's "host:port;host:port" name server list.
func splitAddrs(s string) []string {
	var out []string
	for a := range strings.SplitSeq(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
