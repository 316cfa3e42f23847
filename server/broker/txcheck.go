package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Transaction check-back (RocketMQ's TransactionalMessageCheckService and
// TransactionalMessageServiceImpl.check). Every TransactionCheckInterval
// the half queue is walked from the check progress, kept like a consumer
// offset of the system group CID_SYS_RMQ_TRANS in consumerOffset.json.
// For each half not yet ended and older than TransactionTimeout:
//
//   - its check count, TRANSACTION_CHECK_TIMES, is raised by one; once it
//     has reached TransactionCheckMax the half is given up: moved to
//     TRANS_CHECK_MAX_TIME_TOPIC, where an operator can find it;
//   - otherwise the half is put again at the end of the half queue with
//     the new count (so the count is on disk and survives a restart), and
//     the producer group is asked about the new copy with
//     CHECK_TRANSACTION_STATE (39, oneway), whose body is the half
//     relabelled to its real topic and queue.
//
// The progress then moves past it. A copy carries the queue offset of the
// original half in TRAN_PREPARED_QUEUE_OFFSET, so an END_TRANSACTION for
// either ends both.

// permReadWrite is PermName.PERM_READ | PERM_WRITE, the permission of the
// system topics made here.
const permReadWrite = 4 | 2

// Names of the check's system group and discard topic (TopicValidator,
// MixAll).
const (
	txCheckGroup           = "CID_SYS_RMQ_TRANS"
	topicTransCheckMaxTime = "TRANS_CHECK_MAX_TIME_TOPIC"
)

// checkLoop asks producers about halves left open too long.
func (b *Broker) checkLoop() {
	t := time.NewTicker(b.opts.TransactionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.checkHalves()
		}
	}
}

// originalOffset is the queue offset of the half a copy was made from, or
// off for an original.
func originalOffset(off int64, props string) int64 {
	if v, ok := message.LookupProperty(props, message.PropertyTransactionPreparedQueueOffset); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return off
}

// halfResolved reports whether the half at off, or the one it is a copy
// of, has ended.
func (b *Broker) halfResolved(off int64, props string) bool {
	return b.tx.isResolved(off) || b.tx.isResolved(originalOffset(off, props))
}

func (b *Broker) checkHalves() {
	b.loadResolved()
	st := b.store
	now := time.Now().UnixMilli()
	minOff, maxOff := st.GetMinOffsetInQueue(message.TopicTransHalf, 0), st.GetMaxOffsetInQueue(message.TopicTransHalf, 0)
	start, ok := b.offsets.Query(txCheckGroup, message.TopicTransHalf, 0)
	if !ok || start < minOff {
		start = minOff
	}
	off := start
	for ; off < maxOff; off++ {
		select {
		case <-b.stop:
			return
		default:
		}
		if b.tx.isResolved(off) {
			continue
		}
		phy, err := st.GetCommitLogOffsetInQueue(message.TopicTransHalf, 0, off)
		if err != nil {
			continue
		}
		rec, sl, err := st.LookMessageByOffset(phy)
		if err != nil {
			continue
		}
		half := rec.Message()
		sl.Release()
		if b.halfResolved(off, half.Properties) {
			continue
		}
		if now-half.StoreTimestamp < b.opts.TransactionTimeout.Milliseconds() {
			break // later halves are newer: check them next time
		}
		if !b.checkHalf(off, half) {
			break // the store refused the copy: try again next time
		}
	}
	if off != start {
		b.offsets.Commit(txCheckGroup, message.TopicTransHalf, 0, off)
		if err := b.offsets.Persist(); err != nil {
			b.log.Warn("saving the transaction check progress failed", "err", err)
		}
	}
}

// checkHalf counts one more check of the half at off and either gives it
// up or puts it again and asks its producer group. It reports false when
// the half must be looked at again next time.
func (b *Broker) checkHalf(off int64, half *message.Message) bool {
	props := message.ParseProperties(half.Properties)
	checks := 1
	if v, ok := props[message.PropertyTransactionCheckTimes]; ok {
		n, _ := strconv.Atoi(v)
		if n >= b.opts.TransactionCheckMax {
			return b.discardHalf(off, half)
		}
		checks = n + 1
	}
	props[message.PropertyTransactionCheckTimes] = strconv.Itoa(checks)
	if _, ok := props[message.PropertyTransactionPreparedQueueOffset]; !ok {
		props[message.PropertyTransactionPreparedQueueOffset] = strconv.FormatInt(off, 10)
	}
	copyMsg := *half
	copyMsg.Properties = message.EncodeProperties(props)
	copyMsg.QueueID = 0
	res, err := b.store.PutMessage(&copyMsg)
	if err != nil {
		b.log.Warn("putting a half message back for its check failed", "tranStateTableOffset", off, "err", err)
		return false
	}
	b.sendCheck(res.QueueOffset, res.WroteOffset, &copyMsg, props)
	return true
}

// discardHalf moves a half checked too often to TRANS_CHECK_MAX_TIME_TOPIC
// (resolveDiscardMsg).
func (b *Broker) discardHalf(off int64, half *message.Message) bool {
	if _, ok := b.topics.Get(topicTransCheckMaxTime); !ok {
		if _, err := b.topics.CreateInSendMessageBack(topicTransCheckMaxTime, 1, permReadWrite, 0); err != nil {
			b.log.Warn("creating the discard topic failed", "topic", topicTransCheckMaxTime, "err", err)
			return false
		}
		b.triggerRegister(topicTransCheckMaxTime)
	}
	d := *half
	d.Topic, d.QueueID = topicTransCheckMaxTime, 0
	if _, err := b.store.PutMessage(&d); err != nil {
		b.log.Warn("moving a half message checked too often failed", "tranStateTableOffset", off, "err", err)
		return false
	}
	b.log.Warn("a transaction was checked too many times; its half message is moved to "+topicTransCheckMaxTime,
		"tranStateTableOffset", off, "checks", b.opts.TransactionCheckMax,
		"realTopic", message.ParseProperties(half.Properties)[message.PropertyRealTopic])
	return true
}

// sendCheck sends CHECK_TRANSACTION_STATE for the half at tableOffset /
// phy to a producer of its group, if one is connected.
func (b *Broker) sendCheck(tableOffset, phy int64, half *message.Message, props map[string]string) {
	group := props[message.PropertyProducerGroup]
	// The body is the half relabelled to its real topic and queue
	// (AbstractTransactionalMessageCheckListener.sendCheckMessage).
	rel := *half
	rel.Topic = props[message.PropertyRealTopic]
	if qid, err := strconv.Atoi(props[message.PropertyRealQueueID]); err == nil {
		rel.QueueID = int32(qid)
	}
	rel.QueueOffset, rel.PhysicalOffset, rel.StoreHost = tableOffset, phy, b.host
	rel.BodyCRC = message.BodyCRC(rel.Body)
	conn, ok := b.clients.ProducerConn(group)
	if !ok {
		if check, _ := b.txChecker.Load().(TransactionChecker); check != nil && check(group, &rel) {
			return
		}
		b.log.Debug("no producer of the group to check a transaction with", "group", group, "tranStateTableOffset", tableOffset)
		return
	}
	body, err := message.AppendEncode(nil, &rel)
	if err != nil {
		b.log.Warn("encoding a transaction check failed", "err", err)
		return
	}
	uniq := props[message.PropertyUniqClientMessageIDKeyIndex]
	txID, ok := props[message.PropertyTransactionID]
	if !ok {
		txID = uniq
	}
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(tableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(phy, 10),
		"msgId":                uniq,
		"transactionId":        txID,
		"offsetMsgId":          message.OffsetMsgID(b.host, phy),
		"topic":                rel.Topic,
		"bname":                b.opts.BrokerName,
	}, body)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := conn.InvokeOneway(ctx, req); err != nil {
		b.log.Debug("transaction check failed", "group", group, "err", err)
	}
}

// TransactionChecker asks a producer of group that is not connected over
// remoting (the gRPC endpoint's) about the half message half, relabelled
// to its real topic and queue, with QueueOffset and PhysicalOffset those
// of the half to end. It reports whether it found such a producer.
type TransactionChecker func(group string, half *message.Message) bool

// SetTransactionChecker sets the checker of transactions whose producers
// are not connected over remoting.
func (b *Broker) SetTransactionChecker(c TransactionChecker) { b.txChecker.Store(c) }
