package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/store"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	code := m.Run()
	removeMQAdminBinary()
	os.Exit(code)
}

// system is a name server and a broker on loopback.
type system struct {
	t        *testing.T
	ns       *namesrv.Server
	nsAddr   string
	b        *broker.Broker
	opts     broker.Options
	storeDir string
}

var groupSeq atomic.Int64

// unique returns a name no other test in this process uses: the Go client
// keeps global state per group and instance name.
func unique(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), groupSeq.Add(1))
}

func startSystem(t *testing.T, storeOpts store.Options) *system {
	t.Helper()
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ns.Serve(ln)
	s := &system{t: t, ns: ns, nsAddr: ln.Addr().String(), storeDir: t.TempDir()}
	if storeOpts.MessageDelayLevel == "" {
		storeOpts.MessageDelayLevel = "100ms 100ms 100ms 200ms" // retries come back fast
	}
	s.opts = broker.Options{
		ListenAddr:       "127.0.0.1:0",
		NoVIPChannel:     true,
		NamesrvAddrs:     []string{s.nsAddr},
		StoreDir:         s.storeDir,
		Store:            storeOpts,
		RegisterInterval: time.Second,
		// Open transactions are checked back quickly.
		TransactionCheckInterval: 300 * time.Millisecond,
		TransactionTimeout:       time.Second,
	}
	s.startBroker()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if s.b != nil {
			s.b.Shutdown(ctx)
		}
		ns.Shutdown(ctx)
	})
	return s
}

func (s *system) startBroker() {
	s.t.Helper()
	b, err := broker.New(s.opts)
	require.NoError(s.t, err)
	s.b = b
	s.opts.ListenAddr = b.Addr() // a restart comes back on the same address
	// Wait for the registration, so clients find the broker.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := s.ns.Routes().TopicRoute("TBW102"); ok {
			return
		}
		require.True(s.t, time.Now().Before(deadline), "the broker did not register")
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *system) restartBroker() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(s.t, s.b.Shutdown(ctx))
	s.b = nil
	s.startBroker()
}

// waitRoute waits until the name server has a route for topic: a topic
// made by a send is registered just after the send returns.
func (s *system) waitRoute(topic string) {
	s.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := s.ns.Routes().TopicRoute(topic); ok {
			return
		}
		require.True(s.t, time.Now().Before(deadline), "no route for %s", topic)
		time.Sleep(5 * time.Millisecond)
	}
}

// restartWith changes the broker's options and restarts it.
func (s *system) restartWith(change func(*broker.Options)) {
	s.t.Helper()
	change(&s.opts)
	s.restartBroker()
}
