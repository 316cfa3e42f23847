package broker

import (
	"context"
	"strconv"
	"sync"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Transactions (RocketMQ's TransactionalMessageService): a half message
// waits in RMQ_SYS_TRANS_HALF_TOPIC queue 0, with its destination in
// REAL_TOPIC and REAL_QID, invisible to consumers. END_TRANSACTION commits
// it (a COMMIT record goes to its real topic) or rolls it back; either way
// an "op" record in RMQ_SYS_TRANS_OP_HALF_TOPIC (body: the half's queue
// offset, tag "d") marks it done. Halves left open longer than
// TransactionTimeout are checked back with their producer group
// (CHECK_TRANSACTION_STATE); see txcheck.go.

// toHalf rewrites a prepared message into its half message.
func toHalf(m *message.Message) {
	props := []byte(m.Properties)
	props = message.AppendProperty(props, message.PropertyRealTopic, m.Topic)
	props = message.AppendProperty(props, message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Properties = string(props)
	m.SysFlag &^= message.TxMask
	m.Topic, m.QueueID = message.TopicTransHalf, 0
}

// isPrepared reports whether a send is a transaction's half message.
func isPrepared(sysFlag int32, props string) bool {
	v, _ := message.LookupProperty(props, message.PropertyTransactionPrepared)
	return sysFlag&message.TxMask == message.TxPrepared && v == "true"
}

// txState is what the broker knows of halves: the queue offsets of those
// ended (read back from the op records after a restart).
type txState struct {
	// end serializes END_TRANSACTIONs, so two for copies of one half (a
	// producer answering two checks) cannot both find it open.
	end      sync.Mutex
	mu       sync.Mutex // guards all below
	resolved map[int64]bool
	loaded   bool
}

func newTxState() *txState {
	return &txState{resolved: map[int64]bool{}}
}

// processEndTransaction handles END_TRANSACTION (37): commit (8) or roll
// back (12) a half message; 0 (unknown) leaves it for the check.
func (b *Broker) processEndTransaction(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback")
	group := h.str("producerGroup")
	tableOffset := h.int64("tranStateTableOffset", 0)
	phyOffset := h.int64("commitLogOffset", 0)
	kind := h.int32("commitOrRollback", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if kind != message.TxCommit && kind != message.TxRollback {
		return nil // unknown: the check asks again later
	}
	return b.endTransaction(group, tableOffset, phyOffset, kind)
}

// EndTransaction commits or rolls back the half message at tableOffset
// (its queue offset in the half topic) and phyOffset, for a producer of
// group that did not come over remoting (the gRPC endpoint). A refusal is
// a *SendError.
func (b *Broker) EndTransaction(group string, tableOffset, phyOffset int64, commit bool) error {
	kind := message.TxRollback
	if commit {
		kind = message.TxCommit
	}
	if resp := b.endTransaction(group, tableOffset, phyOffset, kind); resp.Code != remoting.Success {
		return &SendError{resp.Code, resp.Remark}
	}
	return nil
}

// endTransaction is END_TRANSACTION's commit or rollback.
func (b *Broker) endTransaction(group string, tableOffset, phyOffset int64, kind int32) *remoting.Command {
	rec, sl, err := b.store.LookMessageByOffset(phyOffset)
	if err != nil {
		return errResponse(remoting.SystemError, "Find prepared transaction message failed")
	}
	half := rec.Message()
	sl.Release()
	if half.Topic != message.TopicTransHalf || half.QueueOffset != tableOffset {
		return errResponse(remoting.SystemError, "the transaction state table offset is wrong")
	}
	if pg, _ := message.LookupProperty(half.Properties, message.PropertyProducerGroup); pg != group {
		return errResponse(remoting.SystemError, "The producer group wrong")
	}
	b.loadResolved()
	b.tx.end.Lock()
	defer b.tx.end.Unlock()
	if b.halfResolved(tableOffset, half.Properties) {
		return remoting.NewResponse(remoting.Success, "") // already ended
	}
	if kind == message.TxCommit {
		props := message.ParseProperties(half.Properties)
		topic := props[message.PropertyRealTopic]
		qid, err := strconv.Atoi(props[message.PropertyRealQueueID])
		if topic == "" || err != nil {
			return errResponse(remoting.SystemError, "the half message has no real topic")
		}
		delete(props, message.PropertyRealTopic)
		delete(props, message.PropertyRealQueueID)
		delete(props, message.PropertyTransactionPrepared)
		delete(props, message.PropertyTransactionCheckTimes)
		delete(props, message.PropertyTransactionPreparedQueueOffset)
		final := &message.Message{
			Topic:                     topic,
			QueueID:                   int32(qid),
			Flag:                      half.Flag,
			Body:                      half.Body,
			Properties:                message.EncodeProperties(props),
			SysFlag:                   half.SysFlag&^message.TxMask | message.TxCommit,
			BornTimestamp:             half.BornTimestamp,
			BornHost:                  half.BornHost,
			ReconsumeTimes:            half.ReconsumeTimes,
			PreparedTransactionOffset: phyOffset,
		}
		if _, err := b.store.PutMessage(final); err != nil {
			return putError(err)
		}
	}
	if err := b.markHalfDone(tableOffset); err != nil {
		return putError(err)
	}
	// Ending a copy ends the original too, and so every other copy of it:
	// each looks up its original (halfResolved).
	if orig := originalOffset(tableOffset, half.Properties); orig != tableOffset {
		if err := b.markHalfDone(orig); err != nil {
			return putError(err)
		}
	}
	return remoting.NewResponse(remoting.Success, "")
}

// markHalfDone writes the op record of a half and remembers it.
func (b *Broker) markHalfDone(tableOffset int64) error {
	op := &message.Message{
		Topic:      message.TopicTransOpHalf,
		Body:       []byte(strconv.FormatInt(tableOffset, 10)),
		Properties: string(message.AppendProperty(nil, message.PropertyTags, "d")),
		BornHost:   b.host,
	}
	if _, err := b.store.PutMessage(op); err != nil {
		return err
	}
	b.tx.mu.Lock()
	b.tx.resolved[tableOffset] = true
	b.tx.mu.Unlock()
	return nil
}

func (t *txState) isResolved(off int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.resolved[off]
}

// loadResolved reads the op records once, after a restart.
func (b *Broker) loadResolved() {
	b.tx.mu.Lock()
	defer b.tx.mu.Unlock()
	if b.tx.loaded {
		return
	}
	b.tx.loaded = true
	st := b.store
	for off := st.GetMinOffsetInQueue(message.TopicTransOpHalf, 0); off < st.GetMaxOffsetInQueue(message.TopicTransOpHalf, 0); {
		r := st.GetMessage("", message.TopicTransOpHalf, 0, off, 32, nil)
		for _, m := range r.Messages {
			if rec, err := message.Parse(m.Bytes()); err == nil {
				if n, err := strconv.ParseInt(string(rec.Body()), 10, 64); err == nil {
					b.tx.resolved[n] = true
				}
			}
		}
		next := r.NextBeginOffset
		r.Release()
		if next <= off {
			break
		}
		off = next
	}
}
