package proxy

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/protocol"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// validateTopic is GrpcValidator.validateTopic: a legal name, not a system topic.
func validateTopic(r *v2.Resource) (string, error) {
	name := r.GetName()
	if err := message.ValidateTopic(name); err != nil {
		return "", fail(v2.Code_ILLEGAL_TOPIC, err.Error())
	}
	if strings.HasPrefix(name, "rmq_sys_") || name == "TBW102" || name == "SCHEDULE_TOPIC_XXXX" || name == "RMQ_SYS_TRANS_HALF_TOPIC" {
		return "", fail(v2.Code_ILLEGAL_TOPIC, "cannot access system topic")
	}
	return name, nil
}

// validateGroup is GrpcValidator.validateConsumerGroup.
func validateGroup(r *v2.Resource) (string, error) {
	name := r.GetName()
	if name == "" || len(name) > 255 || strings.ContainsFunc(name, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '%' || c == '|')
	}) {
		return "", fail(v2.Code_ILLEGAL_CONSUMER_GROUP, "the consumer group "+strconv.Quote(name)+" is illegal: [%|a-zA-Z0-9_-]{1,255}")
	}
	if strings.HasPrefix(name, "CID_RMQ_SYS_") || strings.HasPrefix(name, "rmq_sys_") {
		return "", fail(v2.Code_ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
	}
	return name, nil
}

// topicConfig returns a topic's config, or TOPIC_NOT_FOUND.
func (s *Server) topicConfig(topic string) (protocol.TopicConfig, error) {
	cfg, ok := s.b.Topics().Get(topic)
	if !ok {
		return cfg, fail(v2.Code_TOPIC_NOT_FOUND, "topic "+topic+" not found")
	}
	return cfg, nil
}

// acceptTypes lists what a topic takes (RouteActivity.parseTopicMessageType).
func acceptTypes(cfg protocol.TopicConfig) []v2.MessageType {
	switch broker.TopicMessageType(cfg) {
	case broker.MessageTypeFIFO:
		return []v2.MessageType{v2.MessageType_FIFO}
	case broker.MessageTypeDelay:
		return []v2.MessageType{v2.MessageType_DELAY}
	case broker.MessageTypeTransaction:
		return []v2.MessageType{v2.MessageType_TRANSACTION}
	case broker.MessageTypeMixed:
		return []v2.MessageType{v2.MessageType_NORMAL, v2.MessageType_FIFO, v2.MessageType_DELAY, v2.MessageType_TRANSACTION}
	}
	return []v2.MessageType{v2.MessageType_NORMAL}
}

// endpoints is where clients reach this endpoint: the access point the
// client used (Apache's local mode echoes it), else the local address of
// the call.
func endpoints(req *v2.Endpoints, local net.Addr) *v2.Endpoints {
	if req != nil && len(req.Addresses) > 0 {
		return req
	}
	host, port := "127.0.0.1", 8081
	if ta, ok := local.(*net.TCPAddr); ok {
		host, port = ta.IP.String(), ta.Port
	}
	return &v2.Endpoints{Scheme: v2.AddressScheme_IPv4, Addresses: []*v2.Address{{Host: host, Port: int32(port)}}}
}

// QueryRoute answers the topic's queues on this broker
// (RouteActivity.genMessageQueueFromQueueData).
func (s *Server) QueryRoute(ctx context.Context, req *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	topic, err := validateTopic(req.Topic)
	if err != nil {
		return &v2.QueryRouteResponse{Status: statusOf(err)}, nil
	}
	cfg, err := s.topicConfig(topic)
	if err != nil {
		return &v2.QueryRouteResponse{Status: statusOf(err)}, nil
	}
	name, _ := s.b.Name()
	br := &v2.Broker{Name: name, Id: 0, Endpoints: endpoints(req.Endpoints, localAddr(ctx))}
	types := acceptTypes(cfg)
	var r, w, rw, n int
	readable, writable := cfg.Perm&protocol.PermRead != 0, cfg.Perm&protocol.PermWrite != 0
	switch {
	case readable && writable:
		rw = min(cfg.WriteQueueNums, cfg.ReadQueueNums)
		r, w = cfg.ReadQueueNums-rw, cfg.WriteQueueNums-rw
	case writable:
		w = cfg.WriteQueueNums
	case readable:
		r = cfg.ReadQueueNums
	default:
		n = max(1, cfg.WriteQueueNums, cfg.ReadQueueNums)
	}
	var qs []*v2.MessageQueue
	add := func(count int, perm v2.Permission) {
		for range count {
			qs = append(qs, &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: int32(len(qs)), Permission: perm,
				Broker: br, AcceptMessageTypes: types})
		}
	}
	add(r, v2.Permission_READ)
	add(w, v2.Permission_WRITE)
	add(rw, v2.Permission_READ_WRITE)
	add(n, v2.Permission_NONE)
	return &v2.QueryRouteResponse{Status: okStatus(), MessageQueues: qs}, nil
}

// QueryAssignment gives a push consumer what to receive from
// (QueryAssignmentActivity): every readable queue for a FIFO group, one
// assignment of the whole broker (queue -1) otherwise.
func (s *Server) QueryAssignment(ctx context.Context, req *v2.QueryAssignmentRequest) (*v2.QueryAssignmentResponse, error) {
	topic, err := validateTopic(req.Topic)
	if err == nil {
		_, err = validateGroup(req.Group)
	}
	if err != nil {
		return &v2.QueryAssignmentResponse{Status: statusOf(err)}, nil
	}
	cfg, err := s.topicConfig(topic)
	if err != nil {
		return &v2.QueryAssignmentResponse{Status: statusOf(err)}, nil
	}
	gcfg, ok := s.b.Groups().FindOrCreate(req.Group.Name)
	if !ok {
		return &v2.QueryAssignmentResponse{Status: statusOf(fail(v2.Code_CONSUMER_GROUP_NOT_FOUND, "consumer group "+req.Group.Name+" not found"))}, nil
	}
	if cfg.Perm&protocol.PermRead == 0 {
		return &v2.QueryAssignmentResponse{Status: okStatus()}, nil
	}
	name, _ := s.b.Name()
	br := &v2.Broker{Name: name, Id: 0, Endpoints: endpoints(req.Endpoints, localAddr(ctx))}
	mq := func(id int32) *v2.Assignment {
		return &v2.Assignment{MessageQueue: &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: id,
			Permission: v2.Permission_READ_WRITE, Broker: br, AcceptMessageTypes: acceptTypes(cfg)}}
	}
	var as []*v2.Assignment
	if gcfg.ConsumeMessageOrderly {
		for i := range cfg.ReadQueueNums {
			as = append(as, mq(int32(i)))
		}
	} else {
		as = append(as, mq(-1))
	}
	return &v2.QueryAssignmentResponse{Status: okStatus(), Assignments: as}, nil
}
