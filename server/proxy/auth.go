package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rocketstore/rocketstore/server/auth"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// Access control of the gRPC endpoint, as Apache's proxy pipeline: every
// request message (each one of a Telemetry stream) is authenticated from
// the call's "authorization" and "x-mq-date-time" metadata and authorized
// with the broker's Authority, the one the remoting gate uses. A refusal
// is answered as Apache answers it: the call succeeds and the response's
// Status carries Code UNAUTHORIZED with upstream's remark (Apache's
// ResponseBuilder gives UNAUTHORIZED to authentication and authorization
// refusals alike); a server stream then ends, a Telemetry stream goes on
// without the refused command.

// authUnary is the unary interceptor.
func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authCheck(ctx, req); err != nil {
		return refusal(info.FullMethod, err), nil
	}
	return handler(ctx, req)
}

// authStream is the stream interceptor: a server stream's one request is
// read and checked before the handler runs; a client stream's requests
// are checked as the handler reads them.
func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !s.authOn() {
		return handler(srv, ss)
	}
	w := &checkedStream{ServerStream: ss, s: s, method: info.FullMethod}
	if !info.IsClientStream {
		in := newMessage(info.FullMethod, false)
		if in == nil {
			return handler(srv, ss)
		}
		if err := ss.RecvMsg(in); err != nil {
			return err
		}
		if err := s.authCheck(ss.Context(), in); err != nil {
			return ss.SendMsg(refusal(info.FullMethod, err))
		}
		w.first = in
	}
	return handler(srv, w)
}

// checkedStream checks each request the handler reads; its sends are
// serialized with the refusals it writes itself.
type checkedStream struct {
	grpc.ServerStream
	s      *Server
	method string
	first  proto.Message // read and checked by authStream, handed out once

	mu sync.Mutex // one SendMsg at a time
}

func (c *checkedStream) RecvMsg(m any) error {
	if c.first != nil {
		proto.Merge(m.(proto.Message), c.first)
		c.first = nil
		return nil
	}
	for {
		if err := c.ServerStream.RecvMsg(m); err != nil {
			return err
		}
		err := c.s.authCheck(c.Context(), m)
		if err == nil {
			return nil
		}
		if err := c.SendMsg(refusal(c.method, err)); err != nil {
			return err
		}
		proto.Reset(m.(proto.Message))
	}
}

func (c *checkedStream) SendMsg(m any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ServerStream.SendMsg(m)
}

// authOn reports whether the broker checks credentials or ACLs.
func (s *Server) authOn() bool {
	a := s.b.Authority()
	if a == nil {
		return false
	}
	c := a.Config()
	return c.Enabled()
}

// authCheck decides one request message of the call of ctx.
func (s *Server) authCheck(ctx context.Context, req any) error {
	if !s.authOn() {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var ip netip.Addr
	if p, ok := peer.FromContext(ctx); ok {
		if ta, ok := p.Addr.(*net.TCPAddr); ok {
			ip = ta.AddrPort().Addr().Unmap()
		}
	}
	return s.b.Authority().CheckV2(first(auth.AuthorizationMetadata), first(auth.DateTimeMetadata), ip,
		func() ([]auth.Check, error) { return grpcChecks(req) })
}

// refusal is the response of method that answers a refused request: its
// message type with only Status set.
func refusal(method string, err error) proto.Message {
	remark := err.Error()
	var r *auth.Refusal
	if errors.As(err, &r) {
		remark = r.Remark
	}
	out := newMessage(method, true)
	if out == nil {
		out = &v2.Status{}
	}
	m := out.ProtoReflect()
	st := &v2.Status{Code: v2.Code_UNAUTHORIZED, Message: remark}
	if fd := m.Descriptor().Fields().ByName("status"); fd != nil {
		m.Set(fd, protoreflect.ValueOfMessage(st.ProtoReflect()))
	}
	return out
}

// newMessage is a new request (output false) or response message of the
// MessagingService method full ("/apache.rocketmq.v2.MessagingService/X").
func newMessage(full string, output bool) proto.Message {
	name := full[strings.LastIndexByte(full, '/')+1:]
	sd := v2.File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService")
	if sd == nil {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil
	}
	d := md.Input()
	if output {
		d = md.Output()
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
	if err != nil {
		return nil
	}
	return mt.New().Interface()
}
