package broker

import (
	"fmt"

	"github.com/rocketstore/rocketstore/ha"
	"math/rand/v2"
	"net/netip"
	"strings"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/broker/pop"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// reviveTopicPrefix names the topic of POP's check-point and ack records
// (Apache: PopAckConstants.REVIVE_TOPIC + cluster name).
const reviveTopicPrefix = "rmq_sys_REVIVE_LOG_"

// ReviveTopic is this broker's revive topic.
func (b *Broker) ReviveTopic() string { return reviveTopicPrefix + b.opts.ClusterName }

// openPop creates the revive topic when missing and opens the POP service
// over the store (its state replayed from the revive topic).
func (b *Broker) openPop() error {
	if b.opts.BrokerRole == ha.RoleSlave {
		return nil // a slave serves no POP: its store takes no puts
	}
	rt := b.ReviveTopic()
	if _, ok := b.topics.Get(rt); !ok {
		if _, err := b.topics.CreateInSendMessageBack(rt, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
			return fmt.Errorf("creating the revive topic %s: %w", rt, err)
		}
	}
	var err error
	b.pop, err = pop.Open(pop.Options{
		Store:       b.store,
		ReviveTopic: rt,
		BrokerName:  b.opts.BrokerName,
		StoreHost:   b.host,
		QueueNums: func(topic string) int {
			cfg, ok := b.topics.Get(topic)
			if !ok || cfg.Perm&protocol.PermRead == 0 {
				return 0
			}
			return cfg.ReadQueueNums
		},
		ConsumerOffset: b.offsets.Query,
		CommitOffset:   b.offsets.Commit,
		MaxDeliveryAttempts: func(group string) int {
			if cfg, ok := b.groups.Get(group); ok {
				return cfg.RetryMaxTimes + 1
			}
			return 16 + 1 // a group's default retryMaxTimes
		},
		DeadLetter: b.putDeadLetter,
		Logger:     b.log,
	})
	if err != nil {
		return err
	}
	b.store.AddArrivalListener(b.pop.Arrived)
	return nil
}

// putDeadLetter stores m in group's dead-letter topic %DLQ%<group>,
// creating it as a send back does.
func (b *Broker) putDeadLetter(group string, m *message.Message) error {
	topic := message.DLQTopicPrefix + group
	if _, ok := b.topics.Get(topic); !ok {
		if _, err := b.topics.CreateInSendMessageBack(topic, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
			return err
		}
		b.triggerRegister()
	}
	m.Topic, m.QueueID = topic, 0
	_, err := b.store.PutMessage(m)
	return err
}

// The parts the gRPC endpoint (server/proxy) serves from, in this process.

// Pop returns the broker's POP consumption service.
func (b *Broker) Pop() *pop.Service { return b.pop }

// Topics returns the broker's topic table.
func (b *Broker) Topics() *meta.Topics { return b.topics }

// Groups returns the broker's subscription group table.
func (b *Broker) Groups() *meta.SubscriptionGroups { return b.groups }

// Offsets returns the broker's consumer offsets.
func (b *Broker) Offsets() *meta.Offsets { return b.offsets }

// Clients returns the broker's client registry.
func (b *Broker) Clients() *clients.Manager { return b.clients }

// Name returns the broker's name and cluster.
func (b *Broker) Name() (brokerName, cluster string) { return b.opts.BrokerName, b.opts.ClusterName }

// Host returns the address stamped into records.
func (b *Broker) Host() netip.AddrPort { return b.host }

// MaxMessageSize is the largest body a send may carry.
func (b *Broker) MaxMessageSize() int {
	if n := b.opts.Store.MaxMessageSize; n > 0 {
		return n
	}
	return 4 << 20
}

// SendError is a refused send: Code is the remoting response code
// (remoting.TopicNotExist, MessageIllegal, ...), as the remoting
// processor answers it.
type SendError struct {
	Code   int
	Remark string
}

func (e *SendError) Error() string { return e.Remark }

// Put stores a message sent through another protocol than remoting (the
// gRPC endpoint): it finds or auto-creates the topic as a send does, picks
// a queue when m.QueueID < 0, keeps transaction halves for their check,
// and adds the broker's properties. A refusal is a *SendError; a put
// whose flush or replica timed out returns the result with its status.
func (b *Broker) Put(m *message.Message) (store.PutResult, error) {
	if resp := b.refuseOnSlave(); resp != nil {
		return store.PutResult{}, &SendError{resp.Code, resp.Remark}
	}
	if err := message.ValidateTopic(m.Topic); err != nil {
		return store.PutResult{}, &SendError{remoting.MessageIllegal, err.Error()}
	}
	if isNotAllowedSendTopic(m.Topic) || strings.HasPrefix(m.Topic, reviveTopicPrefix) {
		return store.PutResult{}, &SendError{remoting.NoPermission, fmt.Sprintf("Sending message to topic[%s] is forbidden.", m.Topic)}
	}
	cfg, resp := b.topicForSend(m.Topic, "", b.opts.DefaultTopicQueueNums, 0)
	if resp != nil {
		return store.PutResult{}, &SendError{resp.Code, resp.Remark}
	}
	if m.QueueID < 0 {
		m.QueueID = rand.Int32N(int32(max(cfg.WriteQueueNums, 1)))
	}
	if m.QueueID >= int32(max(cfg.WriteQueueNums, cfg.ReadQueueNums)) {
		return store.PutResult{}, &SendError{remoting.SystemError, fmt.Sprintf("request queueId[%d] is illegal, %s", m.QueueID, m.Topic)}
	}
	m.Properties = b.withBrokerProperties(m.Properties)
	if isPrepared(m.SysFlag, m.Properties) {
		toHalf(m)
	}
	res, err := b.store.PutMessage(m)
	if err != nil {
		resp := putError(err)
		return res, &SendError{resp.Code, resp.Remark}
	}
	return res, nil
}

// Filter compiles a consumer's filter expression: typ "TAG" (or "")
// takes "a || b" ("*" or "" for all), "SQL92" a property expression, which
// needs enablePropertyFilter.
func (b *Broker) Filter(typ, expr string) (store.Filter, error) {
	switch {
	case isTagType(typ):
		return tagFilter(expr), nil
	case typ != clients.ExpressionSQL92:
		return nil, fmt.Errorf("unknown filter type %q", typ)
	case b.opts.DisablePropertyFilter:
		return nil, fmt.Errorf("the broker does not support consumer to filter message by %s (enablePropertyFilter=false)", typ)
	}
	e, err := b.filterCache().Compile(expr)
	if err != nil {
		return nil, err
	}
	return sqlFilter{e}, nil
}
