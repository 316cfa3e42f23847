package proxy

import (
	"context"
	"time"

	"github.com/rocketstore/rocketstore/message"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/store"
)

// The offset RPCs of newer clients' pull consumers (Apache 5.3's
// PullMessageActivity and the offset activities), on the store's queues.

// queueOf validates a request's group (when given) and message queue.
func (s *Server) queueOf(group *v2.Resource, mq *v2.MessageQueue) (string, string, int32, error) {
	g := ""
	if group != nil {
		var err error
		if g, err = validateGroup(group); err != nil {
			return "", "", 0, err
		}
	}
	topic, err := validateTopic(mq.GetTopic())
	if err != nil {
		return "", "", 0, err
	}
	cfg, err := s.topicConfig(topic)
	if err != nil {
		return "", "", 0, err
	}
	if id := mq.GetId(); id < 0 || int(id) >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
		return "", "", 0, fail(v2.Code_BAD_REQUEST, "the message queue id is out of the topic's queues")
	}
	return g, topic, mq.GetId(), nil
}

// UpdateOffset commits a group's consumer offset of a queue.
func (s *Server) UpdateOffset(ctx context.Context, req *v2.UpdateOffsetRequest) (*v2.UpdateOffsetResponse, error) {
	group, topic, qid, err := s.queueOf(req.Group, req.MessageQueue)
	if err == nil && req.Offset < 0 {
		err = fail(v2.Code_ILLEGAL_OFFSET, "the offset must not be negative")
	}
	if err == nil {
		s.b.Offsets().Commit(group, topic, qid, req.Offset)
	}
	return &v2.UpdateOffsetResponse{Status: statusOf(err)}, nil
}

// GetOffset answers a group's consumer offset of a queue.
func (s *Server) GetOffset(ctx context.Context, req *v2.GetOffsetRequest) (*v2.GetOffsetResponse, error) {
	group, topic, qid, err := s.queueOf(req.Group, req.MessageQueue)
	if err != nil {
		return &v2.GetOffsetResponse{Status: statusOf(err)}, nil
	}
	off, ok := s.b.Offsets().Query(group, topic, qid)
	if !ok {
		return &v2.GetOffsetResponse{Status: statusOf(fail(v2.Code_OFFSET_NOT_FOUND, "the group has no offset of this queue"))}, nil
	}
	return &v2.GetOffsetResponse{Status: okStatus(), Offset: off}, nil
}

// QueryOffset answers a queue's first or end offset, or the first offset
// stored at or after a time.
func (s *Server) QueryOffset(ctx context.Context, req *v2.QueryOffsetRequest) (*v2.QueryOffsetResponse, error) {
	_, topic, qid, err := s.queueOf(nil, req.MessageQueue)
	if err != nil {
		return &v2.QueryOffsetResponse{Status: statusOf(err)}, nil
	}
	st := s.b.Store()
	var off int64
	switch req.QueryOffsetPolicy {
	case v2.QueryOffsetPolicy_BEGINNING:
		off = st.GetMinOffsetInQueue(topic, qid)
	case v2.QueryOffsetPolicy_END:
		off = st.GetMaxOffsetInQueue(topic, qid)
	case v2.QueryOffsetPolicy_TIMESTAMP:
		if req.Timestamp == nil {
			return &v2.QueryOffsetResponse{Status: statusOf(fail(v2.Code_BAD_REQUEST, "the TIMESTAMP policy needs a timestamp"))}, nil
		}
		off = st.GetOffsetInQueueByTime(topic, qid, req.Timestamp.AsTime().UnixMilli())
	default:
		return &v2.QueryOffsetResponse{Status: statusOf(fail(v2.Code_BAD_REQUEST, "unknown query offset policy"))}, nil
	}
	return &v2.QueryOffsetResponse{Status: okStatus(), Offset: off}, nil
}

// PullMessage reads a queue from an offset, waiting up to the long-polling
// time for messages; it streams the status, the messages, then the next
// offset.
func (s *Server) PullMessage(req *v2.PullMessageRequest, stream v2.MessagingService_PullMessageServer) error {
	status := func(err error) error {
		return stream.Send(&v2.PullMessageResponse{Content: &v2.PullMessageResponse_Status{Status: statusOf(err)}})
	}
	group, topic, qid, err := s.queueOf(req.Group, req.MessageQueue)
	if err == nil && req.Offset < 0 {
		err = fail(v2.Code_ILLEGAL_OFFSET, "the offset must not be negative")
	}
	if err != nil {
		return status(err)
	}
	filter, err := s.filterOf(req.GetFilterExpression())
	if err != nil {
		return status(err)
	}
	batch := int(req.BatchSize)
	if batch <= 0 || batch > receiveBatchSize {
		batch = receiveBatchSize
	}
	wait := min(req.GetLongPollingTimeout().AsDuration(), maxLongPolling)
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	svc := s.b.Pop()
	for {
		var wake <-chan struct{}
		if svc != nil {
			wake = svc.Wait(topic)
		}
		res := s.b.Store().GetMessage(group, topic, qid, req.Offset, batch, filter)
		var msgs []*message.Message
		for _, sl := range res.Messages {
			if m, _, err := message.Decode(sl.Bytes()); err == nil {
				msgs = append(msgs, m)
			}
		}
		next, st := res.NextBeginOffset, res.Status
		res.Release()
		if len(msgs) > 0 || (st != store.OffsetOverflowOne && st != store.NoMessageInQueue) || wait <= 0 {
			if len(msgs) == 0 {
				if err := status(fail(v2.Code_MESSAGE_NOT_FOUND, st.String())); err != nil {
					return err
				}
			} else if err := status(nil); err != nil {
				return err
			}
			for _, m := range msgs {
				if err := stream.Send(&v2.PullMessageResponse{Content: &v2.PullMessageResponse_Message{Message: toProto(m, nil, 0, 0)}}); err != nil {
					return err
				}
			}
			return stream.Send(&v2.PullMessageResponse{Content: &v2.PullMessageResponse_NextOffset{NextOffset: next}})
		}
		select {
		case <-wake:
		case <-timer.C:
			wait = 0
		case <-stream.Context().Done():
			return nil
		case <-s.stop:
			wait = 0
		}
	}
}
