package broker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// rebalanceLockMaxLive is how long a queue lock lasts without renewal
// (RebalanceLockManager's 60 s); orderly consumers renew every 20 s.
const rebalanceLockMaxLive = 60 * time.Second

// messageQueue is a queue as clients name it in JSON bodies.
type messageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// lockBatchBody is the body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
type lockBatchBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []messageQueue `json:"mqSet"`
}

// queueLocks is RocketMQ's RebalanceLockManager: which client of a group
// holds each queue, for orderly consumers.
type queueLocks struct {
	mu    sync.Mutex // guards locks
	locks map[lockKey]queueLock
	now   func() time.Time
}

type lockKey struct {
	group string
	mq    messageQueue
}

type queueLock struct {
	clientID string
	renewed  time.Time
}

func newQueueLocks() *queueLocks {
	return &queueLocks{locks: make(map[lockKey]queueLock), now: time.Now}
}

// tryLock locks each queue for clientID that is free, expired or its own,
// and returns the queues it holds.
func (l *queueLocks) tryLock(group, clientID string, mqs []messageQueue) []messageQueue {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	held := []messageQueue{}
	for _, mq := range mqs {
		k := lockKey{group, mq}
		cur, ok := l.locks[k]
		if ok && cur.clientID != clientID && now.Sub(cur.renewed) <= rebalanceLockMaxLive {
			continue
		}
		l.locks[k] = queueLock{clientID: clientID, renewed: now}
		held = append(held, mq)
	}
	return held
}

// unlock releases the queues clientID holds.
func (l *queueLocks) unlock(group, clientID string, mqs []messageQueue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, mq := range mqs {
		k := lockKey{group, mq}
		if cur, ok := l.locks[k]; ok && cur.clientID == clientID {
			delete(l.locks, k)
		}
	}
}

// processLockBatch handles LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42).
func (b *Broker) processLockBatch(_ context.Context, req *remoting.Request) *remoting.Command {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return errResponse(remoting.SystemError, "bad lock body: %v", err)
	}
	if req.Code == remoting.UnlockBatchMQ {
		b.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
		return remoting.NewResponse(remoting.Success, "")
	}
	held := b.locks.tryLock(body.ConsumerGroup, body.ClientID, body.MQSet)
	w := fastjson.NewWriter(nil, false)
	w.BeginObject()
	w.Key("lockOKMQSet")
	w.BeginArray()
	for _, q := range held {
		w.BeginObject()
		w.Key("brokerName")
		w.String(q.BrokerName)
		w.Key("queueId")
		w.Int(int64(q.QueueID))
		w.Key("topic")
		w.String(q.Topic)
		w.End()
	}
	w.End()
	w.End()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = w.Bytes()
	return resp
}
