package proxy

import (
	"context"
	"net"

	"google.golang.org/grpc/peer"
)

// localAddr is the address the call came in on.
func localAddr(ctx context.Context) net.Addr {
	if p, ok := peer.FromContext(ctx); ok {
		return p.LocalAddr
	}
	return nil
}

// remoteAddr is the caller's address, "" when unknown.
func remoteAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}
