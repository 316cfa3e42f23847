package namesrv

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Options configure a Server. The zero value works.
type Options struct {
	// Remoting configures the connections (frame size, idle timeout, ...).
	Remoting remoting.Options
	// BrokerTimeout is how long a broker may stay silent before it is
	// dropped, unless it registers with heartbeatTimeoutMillis (0: 120 s).
	BrokerTimeout time.Duration
	// ScanInterval is how often silent brokers are looked for (0: 5 s, as
	// NamesrvConfig.scanNotActiveBrokerInterval).
	ScanInterval time.Duration
	// Now is the clock of broker liveness (nil: time.Now).
	Now func() time.Time
	// OrderMessageEnable adds the ORDER_TOPIC_CONFIG KV value of a topic to
	// its route as orderTopicConf (NamesrvConfig.orderMessageEnable).
	OrderMessageEnable bool
	// DisableAllTopicList answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER with
	// SYSTEM_ERROR "disable" (NamesrvConfig.enableAllTopicList = false).
	DisableAllTopicList bool
	// Authority, when not nil and its authentication is on, makes the
	// writes (broker registration, KV config, config updates) need a Super
	// user; route reads stay open, as Apache's.
	Authority *auth.Authority
	// Logger receives broker registrations, expiries and connection events
	// (nil: discard).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.BrokerTimeout == 0 {
		o.BrokerTimeout = DefaultBrokerTimeout
	}
	if o.ScanInterval == 0 {
		o.ScanInterval = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Remoting.Logger == nil {
		o.Remoting.Logger = o.Logger
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.BrokerTimeout < 0 {
		errs = append(errs, fmt.Errorf("BrokerTimeout %v is negative", o.BrokerTimeout))
	}
	if o.ScanInterval < 0 {
		errs = append(errs, fmt.Errorf("ScanInterval %v is negative", o.ScanInterval))
	}
	return errors.Join(errs...)
}

// Server is a RocketMQ name server: brokers register their topics with it,
// clients ask it for routes.
type Server struct {
	opts   Options
	log    *slog.Logger
	routes *RouteTable
	kv     *kvConfig
	cfg    *liveConfig
	rs     *remoting.Server

	stop    chan struct{}
	scanner sync.WaitGroup
	closed  atomic.Bool
}

// New returns a name server with its processors registered and its
// scanner of silent brokers running; serve it with Serve or
// ListenAndServe, stop it with Shutdown or Close.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("namesrv: new: %w", err)
	}
	rs, err := remoting.NewServer(opts.Remoting)
	if err != nil {
		return nil, fmt.Errorf("namesrv: new: %w", err)
	}
	s := &Server{
		opts:   opts,
		log:    opts.Logger,
		routes: NewRouteTable(opts.Now, opts.BrokerTimeout, opts.Logger),
		kv:     newKVConfig(),
		cfg:    newLiveConfig(opts),
		rs:     rs,
		stop:   make(chan struct{}),
	}
	for code, f := range map[int]func(context.Context, *remoting.Request) *remoting.Command{
		remoting.RegisterBroker:                s.registerBroker,
		remoting.UnregisterBroker:              s.unregisterBroker,
		remoting.GetRouteInfoByTopic:           s.getRouteInfoByTopic,
		remoting.GetBrokerClusterInfo:          s.getBrokerClusterInfo,
		remoting.GetAllTopicListFromNameServer: s.getAllTopicList,
		remoting.GetTopicsByCluster:            s.getTopicsByCluster,
		remoting.DeleteTopicInNamesrv:          s.deleteTopic,
		remoting.RegisterTopicInNamesrv:        s.registerTopic,
		remoting.WipeWritePermOfBroker:         s.wipeWritePerm,
		remoting.AddWritePermOfBroker:          s.addWritePerm,
		remoting.QueryDataVersion:              s.queryDataVersion,
		remoting.BrokerHeartbeat:               s.brokerHeartbeat,
		remoting.PutKVConfig:                   s.putKVConfig,
		remoting.GetKVConfig:                   s.getKVConfig,
		remoting.DeleteKVConfig:                s.deleteKVConfig,
		remoting.GetKVListByNamespace:          s.getKVList,
	} {
		rs.RegisterFunc(code, f)
	}
	s.registerAdmin()
	if opts.Authority != nil {
		if g := opts.Authority.SuperGate(writeCodes); g != nil {
			rs.SetGate(g)
		}
	}
	rs.OnClose(s.routes.ConnClosed)
	s.scanner.Add(1)
	go s.scanLoop()
	return s, nil
}

// writeCodes are the requests that change the name server (or read its
// config): with authentication on, only Super users may send them.
var writeCodes = map[int]bool{
	remoting.RegisterBroker:         true,
	remoting.UnregisterBroker:       true,
	remoting.BrokerHeartbeat:        true,
	remoting.PutKVConfig:            true,
	remoting.DeleteKVConfig:         true,
	remoting.UpdateNamesrvConfig:    true,
	remoting.GetNamesrvConfig:       true,
	remoting.DeleteTopicInNamesrv:   true,
	remoting.RegisterTopicInNamesrv: true,
	remoting.WipeWritePermOfBroker:  true,
	remoting.AddWritePermOfBroker:   true,
}

// Routes returns the route table, for embedding and inspection.
func (s *Server) Routes() *RouteTable { return s.routes }

// Remoting returns the underlying remoting server, to add processors.
func (s *Server) Remoting() *remoting.Server { return s.rs }

// ListenAndServe listens on the TCP address addr and serves it.
func (s *Server) ListenAndServe(addr string) error { return s.rs.ListenAndServe(addr) }

// Serve serves connections accepted on l until Shutdown or Close, then
// returns remoting.ErrServerClosed.
func (s *Server) Serve(l net.Listener) error { return s.rs.Serve(l) }

// Shutdown stops the scanner and shuts the remoting server down
// gracefully (see remoting.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return remoting.ErrServerClosed
	}
	close(s.stop)
	s.scanner.Wait()
	return s.rs.Shutdown(ctx)
}

// Close stops the scanner and closes every connection at once.
func (s *Server) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return remoting.ErrServerClosed
	}
	close(s.stop)
	s.scanner.Wait()
	return s.rs.Close()
}

// scanLoop drops silent brokers every ScanInterval.
func (s *Server) scanLoop() {
	defer s.scanner.Done()
	t := time.NewTicker(s.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.routes.ScanInactiveBrokers()
		}
	}
}

// missingField is Java's answer to a request without a required header
// field.
func missingField(name string) *remoting.Command {
	return remoting.NewResponse(remoting.SystemError, "the custom field <"+name+"> is null")
}

// requireExt returns the named ext fields, or the error answer for the
// first one missing.
func requireExt(req *remoting.Request, names ...string) ([]string, *remoting.Command) {
	out := make([]string, len(names))
	for i, n := range names {
		v, ok := req.ExtFields[n]
		if !ok {
			return nil, missingField(n)
		}
		out[i] = v
	}
	return out, nil
}

func parseInt(req *remoting.Request, name string) (int64, *remoting.Command) {
	v, err := strconv.ParseInt(strings.TrimSpace(req.Ext(name)), 10, 64)
	if err != nil {
		return 0, remoting.NewResponse(remoting.SystemError, fmt.Sprintf("the custom field <%s> is not a number: %q", name, req.Ext(name)))
	}
	return v, nil
}

// parseBool reads a boolean as Java's Boolean.parseBoolean.
func parseBool(s string) bool { return strings.EqualFold(s, "true") }

func success() *remoting.Command { return remoting.NewResponse(remoting.Success, "") }

func (s *Server) registerBroker(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId")
	if bad != nil {
		return bad
	}
	id, bad := parseInt(req, "brokerId")
	if bad != nil {
		return bad
	}
	r := &BrokerRegistration{
		BrokerName: f[0], BrokerAddr: f[1], ClusterName: f[2], HAServerAddr: f[3], BrokerID: id,
		ZoneName: req.Ext("zoneName"),
	}
	if v, ok := req.ExtFields["heartbeatTimeoutMillis"]; ok && v != "" {
		ms, bad := parseInt(req, "heartbeatTimeoutMillis")
		if bad != nil {
			return bad
		}
		r.HeartbeatTimeout = time.Duration(ms) * time.Millisecond
	}
	if v, ok := req.ExtFields["enableActingMaster"]; ok {
		b := parseBool(v)
		r.EnableActingMaster = &b
	}
	if v := req.Ext("bodyCrc32"); v != "" && v != "0" {
		want, bad := parseInt(req, "bodyCrc32")
		if bad != nil {
			return bad
		}
		if int64(crc32.ChecksumIEEE(req.Body)&0x7FFFFFFF) != want {
			s.log.Warn("namesrv: register broker body crc32 does not match", "from", req.Conn.RemoteAddr(), "broker", r.BrokerAddr)
			return remoting.NewResponse(remoting.SystemError, "crc32 not match")
		}
	}
	body, err := DecodeRegisterBrokerBody(req.Body, parseBool(req.Ext("compressed")), req.Version)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, "Failed to decode RegisterBrokerBody: "+err.Error())
	}
	r.Topics = body.TopicConfigSerializeWrapper
	r.FilterServerList = body.FilterServerList
	if req.Version >= versionV3_0_11 && r.FilterServerList == nil {
		r.FilterServerList = []string{}
	}
	res := s.routes.RegisterBroker(r, req.Conn)
	resp := success()
	if res.HAServerAddr != "" {
		resp.SetExt("haServerAddr", res.HAServerAddr)
	}
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr)
	}
	resp.Body = s.kv.list(NamespaceOrderTopicConfig) // returnOrderTopicConfigToBroker
	return resp
}

func (s *Server) unregisterBroker(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "brokerName", "brokerAddr", "clusterName", "brokerId")
	if bad != nil {
		return bad
	}
	id, bad := parseInt(req, "brokerId")
	if bad != nil {
		return bad
	}
	s.routes.UnregisterBroker(f[2], f[1], f[0], id)
	return success()
}

// versionV4_9_4 is the MQVersion ordinal from which clients get broker ids
// as quoted JSON keys.
const versionV4_9_4 = 401

// faqSuffix is what Java appends to "no route" remarks
// (FAQUrl.suggestTodo(APPLY_TOPIC_URL)).
const faqSuffix = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

func (s *Server) getRouteInfoByTopic(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "topic")
	if bad != nil {
		return bad
	}
	topic := f[0]
	r, ok := s.routes.TopicRoute(topic)
	if !ok {
		return remoting.NewResponse(remoting.TopicNotExist,
			"No topic route info in name server for the topic: "+topic+faqSuffix)
	}
	if s.cfg.orderMessageEnable.Load() {
		r.OrderTopicConf, _ = s.kv.get(NamespaceOrderTopicConfig, topic)
	}
	quote := req.Version >= versionV4_9_4 || parseBool(req.Ext("acceptStandardJsonOnly"))
	resp := success()
	resp.Body = r.AppendJSON(make([]byte, 0, 512), quote)
	return resp
}

func (s *Server) getBrokerClusterInfo(context.Context, *remoting.Request) *remoting.Command {
	resp := success()
	resp.Body = s.routes.ClusterInfo().AppendJSON(nil, false) // Java: plain encode, bare ids
	return resp
}

func (s *Server) getAllTopicList(context.Context, *remoting.Request) *remoting.Command {
	if !s.cfg.enableAllTopicList.Load() {
		return remoting.NewResponse(remoting.SystemError, "disable")
	}
	resp := success()
	resp.Body = (&protocol.TopicList{TopicList: s.routes.Topics()}).AppendJSON(nil)
	return resp
}

func (s *Server) getTopicsByCluster(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "cluster")
	if bad != nil {
		return bad
	}
	resp := success()
	resp.Body = (&protocol.TopicList{TopicList: s.routes.TopicsOfCluster(f[0])}).AppendJSON(nil)
	return resp
}

func (s *Server) deleteTopic(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "topic")
	if bad != nil {
		return bad
	}
	s.routes.DeleteTopic(f[0], req.Ext("clusterName"))
	return success()
}

func (s *Server) registerTopic(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "topic")
	if bad != nil {
		return bad
	}
	if len(req.Body) > 0 {
		r, err := protocol.DecodeTopicRouteData(req.Body)
		if err != nil {
			return remoting.NewResponse(remoting.SystemError, err.Error())
		}
		s.routes.RegisterTopic(f[0], r.QueueDatas)
	}
	return success()
}

func (s *Server) wipeWritePerm(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "brokerName")
	if bad != nil {
		return bad
	}
	n := s.routes.SetWritePerm(f[0], false)
	s.log.Info("namesrv: wiped write permission of broker", "broker", f[0], "topics", n, "from", req.Conn.RemoteAddr())
	resp := success()
	resp.SetExt("wipeTopicCount", strconv.Itoa(n))
	return resp
}

func (s *Server) addWritePerm(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "brokerName")
	if bad != nil {
		return bad
	}
	n := s.routes.SetWritePerm(f[0], true)
	s.log.Info("namesrv: added write permission of broker", "broker", f[0], "topics", n, "from", req.Conn.RemoteAddr())
	resp := success()
	resp.SetExt("addTopicCount", strconv.Itoa(n))
	return resp
}

func (s *Server) queryDataVersion(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "brokerAddr", "clusterName")
	if bad != nil {
		return bad
	}
	var v protocol.DataVersion
	if err := unmarshalFastJSON(req.Body, &v); err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error())
	}
	prev, ok := s.routes.BrokerDataVersion(f[1], f[0])
	s.routes.Touch(f[1], f[0])
	resp := success()
	resp.SetExt("changed", strconv.FormatBool(!ok || prev != v))
	if ok {
		resp.Body = fmt.Appendf(nil, `{"counter":%d,"stateVersion":%d,"timestamp":%d}`, prev.Counter, prev.StateVersion, prev.Timestamp)
	}
	return resp
}

func (s *Server) brokerHeartbeat(_ context.Context, req *remoting.Request) *remoting.Command {
	f, bad := requireExt(req, "clusterName", "brokerAddr")
	if bad != nil {
		return bad
	}
	s.routes.Touch(f[0], f[1])
	return success()
}

func (s *Server) putKVConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	ns, okNS := req.ExtFields["namespace"]
	key, okKey := req.ExtFields["key"]
	if !okNS || !okKey {
		return remoting.NewResponse(remoting.SystemError, "namespace or key is null")
	}
	s.kv.put(ns, key, req.Ext("value"))
	return success()
}

func (s *Server) getKVConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	ns, key := req.Ext("namespace"), req.Ext("key")
	v, ok := s.kv.get(ns, key)
	if !ok {
		return remoting.NewResponse(remoting.QueryNotFound, "No config item, Namespace: "+ns+" Key: "+key)
	}
	resp := success()
	resp.SetExt("value", v)
	return resp
}

func (s *Server) deleteKVConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	s.kv.delete(req.Ext("namespace"), req.Ext("key"))
	return success()
}

func (s *Server) getKVList(_ context.Context, req *remoting.Request) *remoting.Command {
	ns := req.Ext("namespace")
	b := s.kv.list(ns)
	if b == nil {
		return remoting.NewResponse(remoting.QueryNotFound, "No config item, Namespace: "+ns)
	}
	resp := success()
	resp.Body = b
	return resp
}
