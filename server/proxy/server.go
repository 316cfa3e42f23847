package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	"github.com/rocketstore/rocketstore/server/broker"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// Apache ProxyConfig's defaults that clients see.
const (
	minLongPolling         = 5 * time.Second  // grpcClientConsumerMinLongPollingTimeoutMillis
	maxLongPolling         = 20 * time.Second // grpcClientConsumerMaxLongPollingTimeoutMillis
	longPollingReserve     = 100 * time.Millisecond
	defaultInvisible       = 60 * time.Second // defaultInvisibleTimeMills (auto_renew receives)
	minInvisibleForReceive = 10 * time.Second // minInvisibleTimeMillsForRecv
	maxInvisible           = 12 * time.Hour   // maxInvisibleTimeMills
	maxDelay               = 24 * time.Hour   // maxDelayTimeMills
	receiveBatchSize       = 32               // grpcClientConsumerLongPollingBatchSize
	defaultRequestTimeout  = 3 * time.Second
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
}

// Server serves apache.rocketmq.v2.MessagingService for one broker.
type Server struct {
	v2.UnimplementedMessagingServiceServer

	b    *broker.Broker
	log  *slog.Logger
	grpc *grpc.Server

	mu      sync.Mutex // guards clients, txs
	clients map[string]*client
	txs     map[string]txData // open transactions by id

	rr   atomic.Uint32 // round robin of sends without a message group
	stop chan struct{}
	once sync.Once
}

// client is what the endpoint knows of one client (by x-mq-client-id).
type client struct {
	id                string
	language, version string
	settings          *v2.Settings // the client's own, as last written on Telemetry

	sendMu sync.Mutex // one Send at a time on stream
	stream v2.MessagingService_TelemetryServer
}

// New makes a Server for b; Serve serves it.
func New(b *broker.Broker, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{b: b, log: opts.Logger, clients: map[string]*client{}, txs: map[string]txData{}, stop: make(chan struct{})}
	b.SetTransactionChecker(s.checkTransaction)
	s.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(b.MaxMessageSize()+1<<20),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.ChainUnaryInterceptor(s.authUnary), // access control (auth.go)
		grpc.ChainStreamInterceptor(s.authStream),
	)
	v2.RegisterMessagingServiceServer(s.grpc, s)
	return s
}

// Serve serves gRPC (plaintext HTTP/2) on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.grpc.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown ends the long polls in progress, then stops gracefully, or at
// once when ctx ends first.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() { close(s.stop) })
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

// clientOf returns the calling client's record, made on first sight.
func (s *Server) clientOf(ctx context.Context) *client {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	id := first("x-mq-client-id")
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[id]
	if c == nil {
		c = &client{id: id, language: first("x-mq-language"), version: first("x-mq-client-version")}
		s.clients[id] = c
	}
	return c
}

// requestTimeout is the client's request timeout from its Settings.
func (c *client) requestTimeout() time.Duration {
	if c != nil && c.settings != nil && c.settings.RequestTimeout != nil {
		if d := c.settings.RequestTimeout.AsDuration(); d > 0 {
			return d
		}
	}
	return defaultRequestTimeout
}
