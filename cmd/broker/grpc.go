package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/proxy"
)

// defaultGRPCPort is Apache ProxyConfig's grpcServerPort.
const defaultGRPCPort = 8081

// startGRPC serves the RocketMQ 5 gRPC endpoint on grpcServerPort, on the
// host of the broker's listen address. Off with -1. When the port was not
// configured and 8081 is taken (another broker on this machine), the
// broker runs without it and says so; a configured port that cannot be
// bound is an error. With access control on, the endpoint checks every
// call with the broker's Authority (server/proxy/auth.go).
func startGRPC(b *broker.Broker, opts broker.Options, log *slog.Logger) (*proxy.Server, error) {
	port := opts.GRPCServerPort
	if port < 0 {
		return nil, nil
	}
	explicit := port != 0
	if !explicit {
		port = defaultGRPCPort
	}
	host, _, _ := net.SplitHostPort(opts.ListenAddr)
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if explicit {
			return nil, fmt.Errorf("gRPC endpoint (grpcServerPort): %w", err)
		}
		log.Warn("the gRPC endpoint is not served: its default port is taken; set grpcServerPort", "addr", addr, "err", err)
		return nil, nil
	}
	s := proxy.New(b, proxy.Options{Logger: log.With("component", "grpc")})
	go func() {
		if err := s.Serve(ln); err != nil {
			log.Error("gRPC endpoint stopped", "addr", ln.Addr(), "err", err)
		}
	}()
	log.Info("gRPC endpoint serving apache.rocketmq.v2.MessagingService", "addr", ln.Addr().String())
	return s, nil
}

// closeNamesrv stops an embedded name server, if any.
func closeNamesrv(ctx context.Context, ns *namesrv.Server) error {
	if ns == nil {
		return nil
	}
	err := ns.Shutdown(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
