package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/rocketstore/rocketstore/server/broker/pop"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/store"
)

// ReceiveMessage pops from all queues of the topic on this broker, waiting
// up to the long-polling time for messages, woken by arrivals
// (ReceiveMessageActivity). It streams the status, then one message per
// response.
func (s *Server) ReceiveMessage(req *v2.ReceiveMessageRequest, stream v2.MessagingService_ReceiveMessageServer) error {
	ctx := stream.Context()
	c := s.clientOf(ctx)
	status := func(err error) error {
		return stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{Status: statusOf(err)}})
	}
	remaining := time.Hour
	if d, ok := ctx.Deadline(); ok {
		remaining = time.Until(d)
	}
	polling := remaining - c.requestTimeout()/2
	if req.LongPollingTimeout != nil {
		polling = req.LongPollingTimeout.AsDuration()
	}
	polling = min(max(polling, minLongPolling), maxLongPolling)
	if polling > remaining {
		if remaining < minLongPolling {
			return status(fail(v2.Code_ILLEGAL_POLLING_TIME, "The deadline time remaining is not enough for polling, please check network condition"))
		}
		polling = remaining
	}
	topic, err := validateTopic(req.GetMessageQueue().GetTopic())
	if err != nil {
		return status(err)
	}
	group, err := validateGroup(req.Group)
	if err != nil {
		return status(err)
	}
	invisible := defaultInvisible
	if !req.AutoRenew || req.InvisibleDuration != nil {
		invisible = req.GetInvisibleDuration().AsDuration()
		if err := validateInvisible(invisible, minInvisibleForReceive); err != nil {
			return status(err)
		}
	}
	filter, err := s.filterOf(req.GetFilterExpression())
	if err != nil {
		return status(err)
	}
	if _, err := s.topicConfig(topic); err != nil {
		return status(err)
	}
	gcfg, ok := s.b.Groups().FindOrCreate(group)
	if !ok {
		return status(fail(v2.Code_CONSUMER_GROUP_NOT_FOUND, "consumer group "+group+" not found"))
	}
	svc := s.b.Pop()
	if svc == nil {
		return status(fail(v2.Code_FORBIDDEN, "this broker serves no receive: it is a slave"))
	}
	batch := int(req.BatchSize)
	if batch <= 0 {
		batch = receiveBatchSize
	}
	queueID := int32(-1) // all queues, as Apache's ReceiveMessageQueueSelector; FIFO push names one
	if gcfg.ConsumeMessageOrderly && req.GetMessageQueue().GetId() >= 0 && req.AutoRenew {
		queueID = req.MessageQueue.Id
	}
	pr := pop.Request{Group: group, Topic: topic, QueueID: queueID, MaxMessages: batch, Invisible: invisible,
		Filter: filter, FIFO: gcfg.ConsumeMessageOrderly}
	timer := time.NewTimer(max(polling-longPollingReserve, 0))
	defer timer.Stop()
	for {
		wake := svc.Wait(topic)
		got, err := svc.Pop(pr)
		if err != nil {
			return status(err)
		}
		if len(got) > 0 {
			return s.writeMessages(stream, group, topic, got, invisible)
		}
		select {
		case <-wake:
		case <-timer.C:
			return status(fail(v2.Code_MESSAGE_NOT_FOUND, "no new message"))
		case <-ctx.Done():
			return nil
		case <-s.stop:
			return status(fail(v2.Code_MESSAGE_NOT_FOUND, "no new message: the broker is shutting down"))
		}
	}
}

// writeMessages streams OK then the messages; those that could not be
// written are made visible again at once (processThrowableWhenWriteMessage).
func (s *Server) writeMessages(stream v2.MessagingService_ReceiveMessageServer, group, topic string, got []pop.Delivery, invisible time.Duration) error {
	err := stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{Status: okStatus()}})
	for i, d := range got {
		if err == nil {
			err = stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Message{
				Message: toProto(d.Message, &got[i].Handle, d.Attempt, invisible)}})
		}
		if err != nil {
			if _, nerr := s.b.Pop().ChangeInvisible(group, topic, d.Handle, 0); nerr != nil {
				s.log.Debug("making an unsent message visible again failed", "err", nerr)
			}
		}
	}
	return err
}

// validateInvisible is GrpcValidator.validateInvisibleTime.
func validateInvisible(d, min time.Duration) error {
	switch {
	case d < min:
		return fail(v2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too small. min is "+min.String())
	case d > maxInvisible:
		return fail(v2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too large. max is "+maxInvisible.String())
	}
	return nil
}

// handle decodes a receipt handle and refuses an expired one, as Apache's
// proxy does before it asks the broker.
func handle(s string) (pop.Handle, error) {
	h, err := pop.ParseHandle(s)
	if err != nil {
		return h, fail(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is invalid: "+err.Error())
	}
	if h.NextVisibleTime() <= time.Now().UnixMilli() {
		return h, fail(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is expired")
	}
	return h, nil
}

// groupAndTopic validates the names of an ack, a change or a forward.
func groupAndTopic(g, t *v2.Resource) (string, string, error) {
	group, err := validateGroup(g)
	if err != nil {
		return "", "", err
	}
	topic, err := validateTopic(t)
	return group, topic, err
}

// AckMessage acks each entry (AckMessageActivity).
func (s *Server) AckMessage(ctx context.Context, req *v2.AckMessageRequest) (*v2.AckMessageResponse, error) {
	group, topic, err := groupAndTopic(req.Group, req.Topic)
	if err == nil && len(req.Entries) == 0 {
		err = fail(v2.Code_INVALID_RECEIPT_HANDLE, "no entry to ack")
	}
	if err == nil && s.b.Pop() == nil {
		err = fail(v2.Code_FORBIDDEN, "this broker serves no ack: it is a slave")
	}
	if err != nil {
		return &v2.AckMessageResponse{Status: statusOf(err)}, nil
	}
	resp := &v2.AckMessageResponse{}
	codes := map[v2.Code]bool{}
	for _, e := range req.Entries {
		h, err := handle(e.ReceiptHandle)
		if err == nil {
			err = s.b.Pop().Ack(group, topic, h)
		}
		st := statusOf(err)
		codes[st.Code] = true
		resp.Entries = append(resp.Entries, &v2.AckMessageResultEntry{MessageId: e.MessageId, ReceiptHandle: e.ReceiptHandle, Status: st})
	}
	resp.Status = resp.Entries[0].Status
	if len(codes) > 1 {
		resp.Status = &v2.Status{Code: v2.Code_MULTIPLE_RESULTS, Message: "the entries had different results"}
	}
	return resp, nil
}

// ChangeInvisibleDuration makes a message invisible for the duration from
// now and answers its new receipt handle.
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *v2.ChangeInvisibleDurationRequest) (*v2.ChangeInvisibleDurationResponse, error) {
	nh, err := s.changeInvisible(req)
	if err != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: statusOf(err)}, nil
	}
	return &v2.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: nh.String()}, nil
}

func (s *Server) changeInvisible(req *v2.ChangeInvisibleDurationRequest) (pop.Handle, error) {
	group, topic, err := groupAndTopic(req.Group, req.Topic)
	if err != nil {
		return pop.Handle{}, err
	}
	d := req.GetInvisibleDuration().AsDuration()
	if err := validateInvisible(d, 0); err != nil {
		return pop.Handle{}, err
	}
	h, err := handle(req.ReceiptHandle)
	if err != nil {
		return h, err
	}
	if s.b.Pop() == nil {
		return h, fail(v2.Code_FORBIDDEN, "this broker serves no POP: it is a slave")
	}
	return s.b.Pop().ChangeInvisible(group, topic, h, d)
}

// ForwardMessageToDeadLetterQueue moves a received message to the group's
// dead-letter topic at once (a FIFO push consumer's last failure).
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2.ForwardMessageToDeadLetterQueueRequest) (*v2.ForwardMessageToDeadLetterQueueResponse, error) {
	err := func() error {
		group, topic, err := groupAndTopic(req.Group, req.Topic)
		if err != nil {
			return err
		}
		h, err := handle(req.ReceiptHandle)
		if err != nil {
			return err
		}
		if s.b.Pop() == nil {
			return fail(v2.Code_FORBIDDEN, "this broker serves no POP: it is a slave")
		}
		return s.b.Pop().DeadLetter(group, topic, h)
	}()
	if errors.Is(err, context.Canceled) {
		err = fail(v2.Code_INTERNAL_SERVER_ERROR, err.Error())
	}
	return &v2.ForwardMessageToDeadLetterQueueResponse{Status: statusOf(err)}, nil
}

// filterOf compiles a request's filter expression (TAG or SQL92).
func (s *Server) filterOf(fe *v2.FilterExpression) (store.Filter, error) {
	typ := "TAG"
	if fe.GetType() == v2.FilterType_SQL {
		typ = "SQL92"
	}
	f, err := s.b.Filter(typ, fe.GetExpression())
	if err != nil {
		return nil, fail(v2.Code_ILLEGAL_FILTER_EXPRESSION, err.Error())
	}
	return f, nil
}
