package proxy

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// Telemetry is the client's command stream. Each Settings a client writes
// is answered at once with the merged Settings (clients wait for them in
// start-up), as Apache's ClientActivity does.
func (s *Server) Telemetry(stream v2.MessagingService_TelemetryServer) error {
	c := s.clientOf(stream.Context())
	for {
		cmd, err := stream.Recv()
		if err != nil {
			s.mu.Lock()
			if c.stream == stream {
				c.stream = nil
			}
			s.mu.Unlock()
			return nil // the client went away or half-closed
		}
		st := cmd.GetSettings()
		if st == nil {
			continue // results of verify and stack commands: nothing to do with them
		}
		s.mu.Lock()
		c.settings = st
		c.stream = stream
		s.mu.Unlock()
		out, err := s.mergeSettings(st)
		reply := &v2.TelemetryCommand{Status: statusOf(err)}
		if err == nil {
			reply.Command = &v2.TelemetryCommand_Settings{Settings: out}
		}
		if err := c.send(reply); err != nil {
			return err
		}
	}
}

// send writes cmd on the client's Telemetry stream.
func (c *client) send(cmd *v2.TelemetryCommand) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.stream == nil {
		return context.Canceled
	}
	return c.stream.Send(cmd)
}

// mergeSettings is the client's Settings with the server's parts filled in
// (GrpcClientSettingsManager.mergeSettings).
func (s *Server) mergeSettings(in *v2.Settings) (*v2.Settings, error) {
	out := proto.Clone(in).(*v2.Settings)
	switch ps := out.PubSub.(type) {
	case *v2.Settings_Publishing:
		ps.Publishing.MaxBodySize = int32(s.b.MaxMessageSize())
		ps.Publishing.ValidateMessageType = true
		attempts := int32(3)
		if in.BackoffPolicy != nil && in.BackoffPolicy.MaxAttempts > 0 {
			attempts = in.BackoffPolicy.MaxAttempts
		}
		out.BackoffPolicy = &v2.RetryPolicy{MaxAttempts: attempts, Strategy: &v2.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2.ExponentialBackoff{Initial: durationpb.New(10e6), Max: durationpb.New(1e9), Multiplier: 2}}}
	case *v2.Settings_Subscription:
		sub := ps.Subscription
		if sub.Group == nil || sub.Group.Name == "" {
			return nil, fail(v2.Code_ILLEGAL_CONSUMER_GROUP, "the settings name no consumer group")
		}
		cfg, ok := s.b.Groups().FindOrCreate(sub.Group.Name)
		if !ok {
			return nil, fail(v2.Code_CONSUMER_GROUP_NOT_FOUND, "consumer group "+sub.Group.Name+" not found")
		}
		fifo := cfg.ConsumeMessageOrderly
		batch := int32(receiveBatchSize)
		sub.Fifo, sub.ReceiveBatchSize, sub.LongPollingTimeout = &fifo, &batch, durationpb.New(maxLongPolling)
		// The clients implement only the exponential back-off (Apache's
		// default CUSTOMIZED policy leaves a push consumer with none).
		out.BackoffPolicy = &v2.RetryPolicy{MaxAttempts: int32(cfg.RetryMaxTimes + 1), Strategy: &v2.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2.ExponentialBackoff{Initial: durationpb.New(1e9), Max: durationpb.New(7200e9), Multiplier: 2}}}
	}
	return out, nil
}

// Heartbeat keeps the client known (ClientActivity.heartbeat).
func (s *Server) Heartbeat(ctx context.Context, req *v2.HeartbeatRequest) (*v2.HeartbeatResponse, error) {
	s.clientOf(ctx)
	if req.Group != nil && req.Group.Name != "" && req.ClientType != v2.ClientType_PRODUCER {
		if _, ok := s.b.Groups().FindOrCreate(req.Group.Name); !ok {
			return &v2.HeartbeatResponse{Status: statusOf(fail(v2.Code_CONSUMER_GROUP_NOT_FOUND, "consumer group "+req.Group.Name+" not found"))}, nil
		}
	}
	return &v2.HeartbeatResponse{Status: okStatus()}, nil
}

// NotifyClientTermination forgets the client.
func (s *Server) NotifyClientTermination(ctx context.Context, _ *v2.NotifyClientTerminationRequest) (*v2.NotifyClientTerminationResponse, error) {
	c := s.clientOf(ctx)
	s.mu.Lock()
	delete(s.clients, c.id)
	s.mu.Unlock()
	return &v2.NotifyClientTerminationResponse{Status: okStatus()}, nil
}
