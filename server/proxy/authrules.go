package proxy

import (
	"errors"

	"github.com/rocketstore/rocketstore/server/auth"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// grpcChecks maps a request message to what a Normal user needs, as
// Apache's DefaultAuthorizationContextBuilder.build(Metadata, message);
// nil needs nothing but a known user. Safer than upstream: the messages
// it has no rule for (PullMessage, UpdateOffset, GetOffset, QueryOffset,
// SyncLiteSubscription) get the rules of their remoting counterparts
// rather than none, a SendMessage checks the topic of every message (not
// only the first), and an unknown message is for Super users only.
func grpcChecks(req any) ([]auth.Check, error) {
	switch r := req.(type) {
	case *v2.QueryRouteRequest:
		t, err := topicName(r.GetTopic())
		return one(auth.Topic(t), auth.Pub|auth.Sub), err
	case *v2.SendMessageRequest:
		if len(r.GetMessages()) == 0 {
			return nil, errors.New("message is null.")
		}
		var out []auth.Check
		for _, m := range r.GetMessages() {
			t, err := topicName(m.GetTopic())
			if err != nil {
				return nil, err
			}
			out = append(out, auth.Check{Resource: auth.Topic(t), Actions: auth.Pub})
		}
		return out, nil
	case *v2.RecallMessageRequest:
		t, err := topicName(r.GetTopic())
		return one(auth.Topic(t), auth.Pub), err
	case *v2.EndTransactionRequest:
		t, err := topicName(r.GetTopic())
		return one(auth.Topic(t), auth.Pub), err
	case *v2.HeartbeatRequest:
		switch r.GetClientType() {
		case v2.ClientType_PUSH_CONSUMER, v2.ClientType_SIMPLE_CONSUMER, v2.ClientType_PULL_CONSUMER:
			return subGroup(r.GetGroup())
		}
		return nil, nil
	case *v2.ReceiveMessageRequest:
		if r.GetMessageQueue() == nil {
			return nil, errors.New("messageQueue is null.")
		}
		return sub(r.GetGroup(), r.GetMessageQueue().GetTopic(), auth.Sub)
	case *v2.AckMessageRequest:
		return sub(r.GetGroup(), r.GetTopic(), auth.Sub)
	case *v2.ForwardMessageToDeadLetterQueueRequest:
		return sub(r.GetGroup(), r.GetTopic(), auth.Sub)
	case *v2.QueryAssignmentRequest:
		return sub(r.GetGroup(), r.GetTopic(), auth.Sub)
	case *v2.NotifyClientTerminationRequest:
		if r.GetGroup().GetName() == "" {
			return nil, nil
		}
		return subGroup(r.GetGroup())
	case *v2.ChangeInvisibleDurationRequest:
		if r.GetTopic().GetName() == "" { // upstream checks the group only
			return subGroup(r.GetGroup())
		}
		return sub(r.GetGroup(), r.GetTopic(), auth.Sub)
	case *v2.TelemetryCommand:
		return telemetryChecks(r)
	case *v2.PullMessageRequest:
		return sub(r.GetGroup(), r.GetMessageQueue().GetTopic(), auth.Sub)
	case *v2.UpdateOffsetRequest:
		return sub(r.GetGroup(), r.GetMessageQueue().GetTopic(), auth.Sub|auth.Update)
	case *v2.GetOffsetRequest:
		return sub(r.GetGroup(), r.GetMessageQueue().GetTopic(), auth.Sub|auth.Get)
	case *v2.QueryOffsetRequest:
		t, err := topicName(r.GetMessageQueue().GetTopic())
		return one(auth.Topic(t), auth.Get), err
	case *v2.SyncLiteSubscriptionRequest:
		return sub(r.GetGroup(), r.GetTopic(), auth.Sub)
	}
	return []auth.Check{{Resource: auth.Resource{Type: auth.TypeAny}, SuperOnly: true}}, nil
}

// telemetryChecks: a Settings command needs Pub on each topic it
// publishes and Sub on its group and each topic it subscribes; other
// commands need nothing.
func telemetryChecks(r *v2.TelemetryCommand) ([]auth.Check, error) {
	st := r.GetSettings()
	if st == nil {
		return nil, nil
	}
	if st.GetPublishing() == nil && st.GetSubscription() == nil {
		return nil, errors.New("settings command doesn't have publishing or subscription.")
	}
	var out []auth.Check
	for _, t := range st.GetPublishing().GetTopics() {
		n, err := topicName(t)
		if err != nil {
			return nil, err
		}
		out = append(out, auth.Check{Resource: auth.Topic(n), Actions: auth.Pub})
	}
	if s := st.GetSubscription(); s != nil {
		g, err := groupName(s.GetGroup())
		if err != nil {
			return nil, err
		}
		out = append(out, auth.Check{Resource: auth.Group(g), Actions: auth.Sub})
		for _, e := range s.GetSubscriptions() {
			n, err := topicName(e.GetTopic())
			if err != nil {
				return nil, err
			}
			out = append(out, auth.Check{Resource: auth.Topic(n), Actions: auth.Sub})
		}
	}
	return out, nil
}

// sub checks group and topic, for actions.
func sub(group, topic *v2.Resource, actions auth.Actions) ([]auth.Check, error) {
	g, err := groupName(group)
	if err != nil {
		return nil, err
	}
	t, err := topicName(topic)
	if err != nil {
		return nil, err
	}
	return []auth.Check{{Resource: auth.Group(g), Actions: actions}, {Resource: auth.Topic(t), Actions: actions}}, nil
}

// subGroup checks group, Sub.
func subGroup(group *v2.Resource) ([]auth.Check, error) {
	g, err := groupName(group)
	return one(auth.Group(g), auth.Sub), err
}

func one(r auth.Resource, a auth.Actions) []auth.Check {
	return []auth.Check{{Resource: r, Actions: a}}
}

func topicName(r *v2.Resource) (string, error) {
	if r.GetName() == "" {
		return "", errors.New("topic is null.")
	}
	return r.GetName(), nil
}

func groupName(r *v2.Resource) (string, error) {
	if r.GetName() == "" {
		return "", errors.New("group is null.")
	}
	return r.GetName(), nil
}
