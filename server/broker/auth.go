package broker

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// startAuth opens the users and ACLs (config/auth.json, unless the
// options bring an Authority), registers the AUTH_* processors and, when
// authentication or authorization is on, the gate every request passes.
func (b *Broker) startAuth(cfgDir string) error {
	a := b.opts.Authority
	if a == nil {
		var err error
		if a, err = auth.Open(filepath.Join(cfgDir, auth.FileName), b.opts.Auth, b.log); err != nil {
			return err
		}
	}
	b.authority = a
	b.registerAuthProcessors()
	if cfg := a.Config(); cfg.Enabled() {
		b.srv.SetGate(a.Gate(b.authChecks))
		b.log.Info("access control on", "authentication", cfg.AuthenticationEnabled,
			"authorization", cfg.AuthorizationEnabled, "users", len(a.Store().Users("")))
	}
	return nil
}

// Authority is the broker's users and ACLs.
func (b *Broker) Authority() *auth.Authority { return b.authority }

// signInner returns the hook that signs the broker's own requests
// (registration, slave sync) with innerClientAuthenticationCredentials,
// or nil without them.
func (b *Broker) signInner() func(*remoting.Command) {
	c := b.opts.Auth.Inner
	if c == nil {
		return nil
	}
	return func(cmd *remoting.Command) { auth.SignCommand(cmd, c.AccessKey, c.SecretKey) }
}

// authRule says what a request of one code needs.
type authRule func(b *Broker, req *remoting.Request, ext auth.Fields) ([]auth.Check, error)

// authChecks maps a request to its checks as Apache's
// DefaultAuthorizationContextBuilder does; a code without a rule is for
// Super users only (Apache lets any authenticated user call it).
func (b *Broker) authChecks(req *remoting.Request, ext auth.Fields) ([]auth.Check, error) {
	if r, ok := authRules[req.Code]; ok {
		return r(b, req, ext)
	}
	return superOnly(b, req, ext)
}

// Rules built of the request's fields.

func superOnly(b *Broker, _ *remoting.Request, _ auth.Fields) ([]auth.Check, error) {
	return []auth.Check{{Resource: auth.Cluster(b.opts.ClusterName), Actions: auth.Update, SuperOnly: true}}, nil
}

// fields builds a rule from parts, each adding the checks of one field.
func fields(parts ...part) authRule {
	return func(b *Broker, _ *remoting.Request, ext auth.Fields) ([]auth.Check, error) {
		var out []auth.Check
		for _, p := range parts {
			out = p(b, ext, out)
		}
		return out, nil
	}
}

// part adds the checks of one field of a request.
type part func(b *Broker, ext auth.Fields, out []auth.Check) []auth.Check

// field checks the resource mk makes of ext field key; with optional, an
// empty or absent field checks nothing (else it checks the empty name,
// which only Type:* entries cover).
func field(key string, a auth.Actions, mk func(string) auth.Resource, optional bool) part {
	return func(_ *Broker, ext auth.Fields, out []auth.Check) []auth.Check {
		v := ext.Get(key)
		if optional && v == "" {
			return out
		}
		return append(out, auth.Check{Resource: mk(v), Actions: a})
	}
}

// topic checks the topic of ext field key (a retry topic as its group).
func topic(key string, a auth.Actions) part { return field(key, a, auth.TopicOrGroup, false) }

// topicIfSet is topic for a field that may be absent.
func topicIfSet(key string, a auth.Actions) part { return field(key, a, auth.TopicOrGroup, true) }

// group checks the group of ext field key.
func group(key string, a auth.Actions) part { return field(key, a, auth.Group, false) }

// groupIfSet is group for a field that may be absent.
func groupIfSet(key string, a auth.Actions) part { return field(key, a, auth.Group, true) }

// subTopic is the topic of a consumer's request: a retry topic checks
// nothing (its group is checked by the group part), as upstream.
func subTopic(key string, a auth.Actions) part {
	return func(_ *Broker, ext auth.Fields, out []auth.Check) []auth.Check {
		if v := ext.Get(key); !auth.IsRetryTopic(v) {
			return append(out, auth.Check{Resource: auth.Topic(v), Actions: a})
		}
		return out
	}
}

func cluster(a auth.Actions) authRule {
	return func(b *Broker, _ *remoting.Request, _ auth.Fields) ([]auth.Check, error) {
		return []auth.Check{{Resource: auth.Cluster(b.opts.ClusterName), Actions: a}}, nil
	}
}

// send is SEND_MESSAGE and its V2/batch/reply forms: Topic Pub, or for a
// retry topic (a consumer sending back) Group Sub of the retry topic's
// group. Upstream takes the group of a V2 retry send from field a, the
// producer group (apache/rocketmq#9910); the retry topic's own group is
// the consumer's.
func send(key string) authRule {
	return func(_ *Broker, _ *remoting.Request, ext auth.Fields) ([]auth.Check, error) {
		t := ext.Get(key)
		if auth.IsRetryTopic(t) {
			return []auth.Check{{Resource: auth.Group(t), Actions: auth.Sub}}, nil
		}
		return []auth.Check{{Resource: auth.Topic(t), Actions: auth.Pub}}, nil
	}
}

// heartbeat checks each consumer group of the body (Sub) and the topics
// it subscribes (Sub; retry topics left out); a producer's heartbeat
// checks nothing.
func heartbeat(_ *Broker, req *remoting.Request, _ auth.Fields) ([]auth.Check, error) {
	hb, err := clients.DecodeHeartbeat(req.Body)
	if err != nil {
		return nil, err
	}
	var out []auth.Check
	for _, cd := range hb.ConsumerDataSet {
		out = append(out, auth.Check{Resource: auth.Group(cd.GroupName), Actions: auth.Sub})
		for _, sd := range cd.SubscriptionDataSet {
			if !auth.IsRetryTopic(sd.Topic) {
				out = append(out, auth.Check{Resource: auth.Topic(sd.Topic), Actions: auth.Sub})
			}
		}
	}
	return out, nil
}

// lockBatch is LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: the body's group (Sub)
// and the topics of its queues (Sub; retry topics left out).
func lockBatch(_ *Broker, req *remoting.Request, _ auth.Fields) ([]auth.Check, error) {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, fmt.Errorf("lock body: %w", err)
	}
	out := []auth.Check{{Resource: auth.Group(body.ConsumerGroup), Actions: auth.Sub}}
	for _, mq := range body.MQSet {
		if !auth.IsRetryTopic(mq.Topic) {
			out = append(out, auth.Check{Resource: auth.Topic(mq.Topic), Actions: auth.Sub})
		}
	}
	return out, nil
}

// batchAckRule is BATCH_ACK_MESSAGE: the group and topic of each ack of
// the body, Sub (no rule upstream, where any authenticated user may send
// it).
func batchAckRule(_ *Broker, req *remoting.Request, _ auth.Fields) ([]auth.Check, error) {
	var body struct {
		Acks []batchAck `json:"acks"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, fmt.Errorf("BatchAckMessageRequestBody: %w", err)
	}
	var out []auth.Check
	for _, a := range body.Acks {
		out = append(out, auth.Check{Resource: auth.Group(a.Group), Actions: auth.Sub},
			auth.Check{Resource: auth.TopicOrGroup(a.Topic), Actions: auth.Sub})
	}
	return out, nil
}

// checkClient is CHECK_CLIENT_CONFIG: the body's group, Sub (no rule
// upstream, where any authenticated user may send it).
func checkClient(_ *Broker, req *remoting.Request, _ auth.Fields) ([]auth.Check, error) {
	var body checkClientBody
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return nil, fmt.Errorf("CheckClientRequestBody: %w", err)
		}
	}
	return []auth.Check{{Resource: auth.Group(body.Group), Actions: auth.Sub}}, nil
}

// authRules are the rules of the codes the broker serves, Apache's where
// it has one (the explicit cases of DefaultAuthorizationContextBuilder,
// else the @RocketMQAction of the request header); Super only where
// Apache has none. TestAuthRules_EveryServedCode keeps it complete.
var authRules = map[int]authRule{
	remoting.SendMessage:                     send("topic"),
	remoting.SendMessageV2:                   send("b"),
	remoting.SendBatchMessage:                send("b"),
	remoting.SendReplyMessage:                send("topic"), // no rule upstream: as a send
	remoting.SendReplyMessageV2:              send("b"),
	remoting.EndTransaction:                  fields(topicIfSet("topic", auth.Pub)),
	remoting.ConsumerSendMsgBack:             fields(group("group", auth.Sub)),
	remoting.PullMessage:                     fields(subTopic("topic", auth.Sub), group("consumerGroup", auth.Sub)),
	remoting.LitePullMessage:                 fields(subTopic("topic", auth.Sub), group("consumerGroup", auth.Sub)), // no rule upstream: as a pull
	remoting.QueryMessage:                    fields(topic("topic", auth.Sub|auth.Get)),
	remoting.ViewMessageByID:                 viewMessage,
	remoting.HeartBeat:                       heartbeat,
	remoting.UnregisterClient:                fields(groupIfSet("consumerGroup", auth.Sub)),
	remoting.GetConsumerListByGroup:          fields(group("consumerGroup", auth.Sub|auth.Get)),
	remoting.QueryConsumerOffset:             fields(subTopic("topic", auth.Sub|auth.Get), group("consumerGroup", auth.Sub|auth.Get)),
	remoting.UpdateConsumerOffset:            fields(subTopic("topic", auth.Sub|auth.Update), group("consumerGroup", auth.Sub|auth.Update)),
	remoting.LockBatchMQ:                     lockBatch,
	remoting.UnlockBatchMQ:                   lockBatch,
	remoting.CheckClientConfig:               checkClient,
	remoting.GetMaxOffset:                    fields(topic("topic", auth.Get)),
	remoting.GetMinOffset:                    fields(topic("topic", auth.Get)),
	remoting.SearchOffsetByTimestamp:         fields(topic("topic", auth.Get)),
	remoting.GetEarliestMsgStoretime:         fields(topic("topic", auth.Get)),
	remoting.UpdateAndCreateTopic:            fields(topic("topic", auth.Create)),
	remoting.DeleteTopicInBroker:             fields(topic("topic", auth.Delete)),
	remoting.GetTopicStatsInfo:               fields(topic("topic", auth.Get)),
	remoting.GetTopicConfig:                  fields(topic("topic", auth.Get)),
	remoting.QueryTopicConsumeByWho:          fields(topic("topic", auth.Get)),
	remoting.GetSubscriptionGroupConfig:      fields(group("group", auth.Get)),
	remoting.DeleteSubscriptionGroup:         fields(group("groupName", auth.Delete)),
	remoting.GetConsumeStats:                 fields(group("consumerGroup", auth.Get), topicIfSet("topic", auth.Get)),
	remoting.GetConsumerConnectionList:       fields(group("consumerGroup", auth.Get)),
	remoting.GetConsumerRunningInfo:          fields(group("consumerGroup", auth.Get)),
	remoting.ConsumeMessageDirectly:          fields(group("consumerGroup", auth.Sub), topicIfSet("topic", auth.Sub)),
	remoting.InvokeBrokerToResetOffset:       fields(group("group", auth.Update), topic("topic", auth.Update)),
	remoting.InvokeBrokerToGetConsumerStatus: fields(topic("topic", auth.Get), group("group", auth.Get)),
	remoting.GetProducerConnectionList:       cluster(auth.Get),
	remoting.PopMessage:                      fields(group("consumerGroup", auth.Sub), topic("topic", auth.Sub)),
	remoting.AckMessage:                      fields(group("consumerGroup", auth.Sub), topic("topic", auth.Sub)),
	remoting.ChangeMessageInvisibleTime:      fields(group("consumerGroup", auth.Sub), topic("topic", auth.Sub)),
	remoting.Notification:                    fields(group("consumerGroup", auth.Sub), topic("topic", auth.Sub)),
	remoting.BatchAckMessage:                 batchAckRule,

	// No rule upstream, or one without a resource (Apache then lets any
	// authenticated user through): Super only here.
	remoting.UpdateBrokerConfig:               superOnly,
	remoting.GetBrokerConfig:                  superOnly,
	remoting.GetBrokerRuntimeInfo:             superOnly,
	remoting.UpdateAndCreateTopicList:         superOnly,
	remoting.GetAllTopicConfig:                superOnly,
	remoting.GetSystemTopicListFromBroker:     superOnly,
	remoting.UpdateAndCreateSubscriptionGroup: superOnly,
	remoting.GetAllSubscriptionGroupConfig:    superOnly,
	remoting.GetAllConsumerOffset:             superOnly,
	remoting.GetAllDelayOffset:                superOnly,
	remoting.AuthCreateUser:                   superOnly, // AUTH_*: upstream Cluster Update/Get
	remoting.AuthUpdateUser:                   superOnly,
	remoting.AuthDeleteUser:                   superOnly,
	remoting.AuthGetUser:                      superOnly,
	remoting.AuthListUser:                     superOnly,
	remoting.AuthCreateACL:                    superOnly,
	remoting.AuthUpdateACL:                    superOnly,
	remoting.AuthDeleteACL:                    superOnly,
	remoting.AuthGetACL:                       superOnly,
	remoting.AuthListACL:                      superOnly,
}

// viewMessage is VIEW_MESSAGE_BY_ID: Topic Get of the header's topic
// when it has one; without one (the message could be of any topic), Super
// only (upstream then checks nothing).
func viewMessage(b *Broker, req *remoting.Request, ext auth.Fields) ([]auth.Check, error) {
	if t := ext.Get("topic"); t != "" {
		return []auth.Check{{Resource: auth.TopicOrGroup(t), Actions: auth.Get}}, nil
	}
	return superOnly(b, req, ext)
}
