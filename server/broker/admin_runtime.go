package broker

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// brokerVersionDesc is the version the broker reports
// (MQVersion.getVersionDesc of the release whose protocol it speaks).
const brokerVersionDesc = "V5_3_3"

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ftoa(v float64) string { return string(fastjson.AppendJavaDouble(nil, v)) }

// processGetBrokerRuntimeInfo handles GET_BROKER_RUNTIME_INFO (28): a
// KVTable with the keys of Java's AdminBrokerProcessor.prepareRuntimeInfo
// that this broker has figures for.
func (b *Broker) processGetBrokerRuntimeInfo(context.Context, *remoting.Request) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&protocol.KVTable{Table: b.runtimeInfo(time.Now())}).AppendJSON(nil)
	return resp
}

func (b *Broker) runtimeInfo(now time.Time) map[string]string {
	m := map[string]string{}
	b.stats.runtimeInfo(m, now)
	st := b.store
	m["brokerActive"] = "true"
	m["brokerVersionDesc"] = brokerVersionDesc
	m["brokerVersion"] = "0"
	m["commitLogMinOffset"] = itoa(st.MinPhyOffset())
	m["commitLogMaxOffset"] = itoa(st.MaxPhyOffset())
	clRatio := st.CommitLogDiskRatio()
	m["commitLogDiskRatio"] = ftoa(clRatio)
	m["commitLogDiskRatio_"+st.CommitLogDir()] = ftoa(clRatio)
	m["consumeQueueDiskRatio"] = ftoa(st.ConsumeQueueDiskRatio())
	m["dispatchBehindBytes"] = itoa(st.DispatchBehindBytes())
	m["remainHowManyDataToFlush"] = humanBytes(st.FlushBehindBytes())
	m["pageCacheLockTimeMills"] = "0" // the put lock is held for a reservation only
	earliest, err := st.GetStoreEarliestMessageTime()
	if err != nil {
		earliest = -1
	}
	m["earliestMessageTimeStamp"] = itoa(earliest)
	m["startAcceptSendRequestTimeStamp"] = "0"
	m["pullRequestsHeld"] = itoa(b.hold.count.Load())
	m["timerReadBehind"], m["timerOffsetBehind"], m["timerCongestNum"] = "0", "0", "0"
	m["timerEnqueueTps"], m["timerDequeueTps"] = "0.0", "0.0"
	m["remainTransientStoreBufferNumbs"] = "0"
	var fs syscall.Statfs_t
	if syscall.Statfs(st.CommitLogDir(), &fs) == nil {
		m["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.",
			humanBytes(int64(fs.Blocks)*fs.Bsize), humanBytes(int64(fs.Bavail)*fs.Bsize))
	}
	// Requests are served by goroutines, not queued behind thread pools:
	// nothing waits in a queue.
	for _, pool := range []string{"send", "pull", "litePull", "query", "ack"} {
		m[pool+"ThreadPoolQueueSize"] = "0"
		m[pool+"ThreadPoolQueueCapacity"] = "0"
		m[pool+"ThreadPoolQueueHeadWaitTimeMills"] = "0"
	}
	m["EndTransactionQueueSize"], m["EndTransactionThreadPoolQueueCapacity"] = "0", "0"
	return m
}

// humanBytes is MixAll.humanReadableByteCount(bytes, false): "512 B",
// "1.5 KiB" (binary units).
func humanBytes(n int64) string {
	if n < 1024 {
		return itoa(n) + " B"
	}
	exp, v := 0, float64(n)
	for v >= 1024 && exp < 6 {
		v /= 1024
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp-1])
}

// brokerConfig is what GET_BROKER_CONFIG shows and UPDATE_BROKER_CONFIG
// changes: the broker's settings under RocketMQ's broker.conf keys, and a
// data version bumped on every change.
type brokerConfig struct {
	mu      sync.Mutex
	props   map[string]string
	version protocol.DataVersion
}

// liveConfigKeys are the keys UPDATE_BROKER_CONFIG applies to a running
// broker; the others need a restart and are refused.
var liveConfigKeys = map[string]bool{"brokerPermission": true, "traceTopicEnable": true, "msgTraceTopicName": true}

func newBrokerConfig(o Options) *brokerConfig {
	b := strconv.FormatBool
	d := func(d time.Duration) string { return itoa(d.Milliseconds()) }
	flush := "ASYNC_FLUSH"
	if o.Store.FlushDiskType == store.SyncFlush {
		flush = "SYNC_FLUSH"
	}
	_, port, _ := net.SplitHostPort(o.ListenAddr)
	c := &brokerConfig{props: map[string]string{
		"brokerName":                  o.BrokerName,
		"brokerClusterName":           o.ClusterName,
		"brokerId":                    itoa(o.BrokerID),
		"brokerIP1":                   o.BrokerIP1,
		"listenPort":                  port,
		"namesrvAddr":                 strings.Join(o.NamesrvAddrs, ";"),
		"storePathRootDir":            o.StoreDir,
		"autoCreateTopicEnable":       b(!o.DisableAutoCreateTopic),
		"defaultTopicQueueNums":       itoa(int64(o.DefaultTopicQueueNums)),
		"longPollingEnable":           b(!o.DisableLongPolling),
		"flushConsumerOffsetInterval": d(o.FlushConsumerOffsetInterval),
		"transactionCheckInterval":    d(o.TransactionCheckInterval),
		"transactionTimeOut":          d(o.TransactionTimeout),
		"registerNameServerPeriod":    d(o.RegisterInterval),
		"flushDiskType":               flush,
		"brokerRole":                  o.BrokerRole.String(),
		"brokerPermission":            itoa(protocol.PermRead | protocol.PermWrite),
		"traceTopicEnable":            b(o.TraceTopicEnable),
		"msgTraceTopicName":           o.MsgTraceTopicName,
	}}
	c.version.Timestamp = time.Now().UnixMilli()
	return c
}

// text is the config as Java's getAllConfigsFormatString writes it:
// key=value lines.
func (c *brokerConfig) text() (string, protocol.DataVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c.props)) {
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(c.props[k])
		sb.WriteByte('\n')
	}
	return sb.String(), c.version
}

func (c *brokerConfig) get(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.props[key]
}

func (c *brokerConfig) set(kv map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.Copy(c.props, kv)
	c.version.Counter++
	c.version.Timestamp = time.Now().UnixMilli()
}

// parseProperties reads a java.util.Properties text as MixAll.string2Properties
// does for what tools send: key=value (or key:value) lines, # and ! comments.
func parseProperties(s string) (map[string]string, error) {
	out := map[string]string{}
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d %q is not key=value", n+1, line)
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out, nil
}

// processGetBrokerConfig handles GET_BROKER_CONFIG (26): the config as
// properties text, its data version in ext "version".
func (b *Broker) processGetBrokerConfig(context.Context, *remoting.Request) *remoting.Command {
	text, v := b.config.text()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = []byte(text)
	w := fastjson.NewWriter(nil, false)
	w.BeginObject()
	w.Key("counter")
	w.Int(v.Counter)
	w.Key("stateVersion")
	w.Int(v.StateVersion)
	w.Key("timestamp")
	w.Int(v.Timestamp)
	w.End()
	resp.ExtFields = map[string]string{"version": string(w.Bytes())}
	return resp
}

// processUpdateBrokerConfig handles UPDATE_BROKER_CONFIG (25): a
// properties body. Keys a running broker can apply (liveConfigKeys) take
// effect at once; any other key is refused with INVALID_PARAMETER and
// nothing changes, rather than reported changed and ignored.
func (b *Broker) processUpdateBrokerConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	kv, err := parseProperties(string(req.Body))
	if err != nil {
		return errResponse(remoting.SystemError, "string2Properties error: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if !liveConfigKeys[k] {
			if b.config.get(k) != "" {
				return errResponse(remoting.InvalidParameter, "%s cannot change while the broker runs: set it in broker.conf and restart", k)
			}
			return errResponse(remoting.InvalidParameter, "unknown broker config key %s", k)
		}
	}
	if v, ok := kv["brokerPermission"]; ok {
		perm, err := strconv.Atoi(v)
		if err != nil || perm < 0 || perm > protocol.PermPriority|protocol.PermRead|protocol.PermWrite|protocol.PermInherit {
			return errResponse(remoting.InvalidParameter, "brokerPermission %q is not a permission (2 write, 4 read, 6 both)", v)
		}
		if err := b.topics.SetBrokerPermission(perm); err != nil {
			return errResponse(remoting.InvalidParameter, "%v", err)
		}
		b.topics.BumpDataVersion()
		kv["brokerPermission"] = strconv.Itoa(perm)
	}
	if v, ok := kv["traceTopicEnable"]; ok {
		if v != "true" && v != "false" {
			return errResponse(remoting.InvalidParameter, "traceTopicEnable %q is not true or false", v)
		}
	}
	b.config.set(kv)
	if b.config.get("traceTopicEnable") == "true" {
		if err := b.ensureTraceTopic(b.config.get("msgTraceTopicName")); err != nil {
			return errResponse(remoting.SystemError, "%v", err)
		}
	}
	b.triggerRegister()
	return remoting.NewResponse(remoting.Success, "")
}
