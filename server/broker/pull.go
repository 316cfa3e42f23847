package broker

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// Pull request sysFlag bits (PullSysFlag).
const (
	pullCommitOffset = 1 << iota
	pullSuspend
	pullSubscription
	pullClassFilter
)

// pullRequest is a parsed PULL_MESSAGE header.
type pullRequest struct {
	group, topic   string
	queueID        int32
	offset         int64
	maxMsgNums     int
	sysFlag        int32
	commitOffset   int64
	suspendMillis  int64
	subscription   string
	subVersion     int64
	expressionType string
	filter         store.Filter
	req            *remoting.Request
	deadline       time.Time // of a held pull
}

func parsePull(req *remoting.Request) (*pullRequest, error) {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic", "queueId", "queueOffset")
	p := &pullRequest{
		group:          h.str("consumerGroup"),
		topic:          h.str("topic"),
		queueID:        h.int32("queueId", 0),
		offset:         h.int64("queueOffset", 0),
		maxMsgNums:     int(h.int32("maxMsgNums", 32)),
		sysFlag:        h.int32("sysFlag", 0),
		commitOffset:   h.int64("commitOffset", -1),
		suspendMillis:  h.int64("suspendTimeoutMillis", 20000),
		subscription:   h.str("subscription"),
		subVersion:     h.int64("subVersion", 0),
		expressionType: h.str("expressionType"),
		req:            req,
	}
	if p.maxMsgNums <= 0 {
		p.maxMsgNums = 1 // lite-pull sends 0; RocketMQ still returns one message
	}
	return p, h.err
}

// rejectRemark is the remark of the SYSTEM_BUSY answer RocketMQ's remoting
// layer gives a request its processor rejects (NettyRemotingAbstract).
const rejectRemark = "[REJECTREQUEST]system busy, start flow control for a while"

// rejectPull answers a pull or lite pull to a slave without slaveReadEnable
// with SYSTEM_BUSY, as Apache RocketMQ 5's PullMessageProcessor.rejectRequest
// (4.x served it); nil lets the pull go on.
func (b *Broker) rejectPull() *remoting.Command {
	if b.opts.BrokerRole == ha.RoleSlave && !b.opts.SlaveReadEnable {
		return remoting.NewResponse(remoting.SystemBusy, rejectRemark)
	}
	return nil
}

// processPull handles PULL_MESSAGE (11), as RocketMQ's PullMessageProcessor.
func (b *Broker) processPull(_ context.Context, req *remoting.Request) *remoting.Command {
	if resp := b.rejectPull(); resp != nil {
		return resp
	}
	p, err := parsePull(req)
	if err != nil {
		return errResponse(remoting.SystemError, "bad pull header: %v", err)
	}
	return b.pull(p, !b.opts.DisableLongPolling)
}

// pull answers p; with allowSuspend, a pull that finds nothing is held
// and nil is returned (the hold service answers it later).
func (b *Broker) pull(p *pullRequest, allowSuspend bool) *remoting.Command {
	group, ok := b.groups.FindOrCreate(p.group)
	if !ok {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist", p.group)
	}
	if !group.ConsumeEnable {
		return errResponse(remoting.NoPermission, "subscription group no permission, %s", p.group)
	}
	cfg, ok := b.topics.Get(p.topic)
	if !ok {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", p.topic)
	}
	if cfg.Perm&protocol.PermRead == 0 {
		return errResponse(remoting.NoPermission, "the topic[%s] pulling message is forbidden", p.topic)
	}
	if p.queueID < 0 || int(p.queueID) >= cfg.ReadQueueNums {
		return errResponse(remoting.SystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			p.queueID, p.topic, cfg.ReadQueueNums, p.req.Conn.RemoteAddr())
	}
	if p.filter == nil {
		if resp := b.pullFilter(p); resp != nil {
			return resp
		}
	}

	res := b.store.GetMessage(p.group, p.topic, p.queueID, p.offset, p.maxMsgNums, p.filter)
	released := false
	defer func() {
		if !released {
			res.Release()
		}
	}()
	b.stats.pulled(p.group, p.topic, len(res.Messages), res.BufferTotalSize)
	code, remark := remoting.Success, ""
	switch res.Status {
	case store.Found:
	case store.MessageWasRemoving, store.NoMatchedMessage:
		code = remoting.PullRetryImmediately
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		code = remoting.PullNotFound
		if p.offset != 0 {
			code = remoting.PullOffsetMoved
		}
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		code = remoting.PullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		code = remoting.PullOffsetMoved
	}
	if code != remoting.Success {
		remark = res.Status.String()
	}
	// A slave takes no offset from a pull (RocketMQ 4.x): clients clear the
	// flag for slaves, and commit with UPDATE_CONSUMER_OFFSET.
	if p.sysFlag&pullCommitOffset != 0 && allowSuspend && p.commitOffset >= 0 && b.opts.BrokerRole != ha.RoleSlave {
		b.offsets.Commit(p.group, p.topic, p.queueID, p.commitOffset)
	}
	if code == remoting.PullNotFound && allowSuspend && p.sysFlag&pullSuspend != 0 {
		b.hold.suspend(p, res.MaxOffset)
		return nil
	}
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = map[string]string{
		"nextBeginOffset":      strconv.FormatInt(res.NextBeginOffset, 10),
		"minOffset":            strconv.FormatInt(res.MinOffset, 10),
		"maxOffset":            strconv.FormatInt(res.MaxOffset, 10),
		"suggestWhichBrokerId": strconv.FormatInt(b.suggestBroker(group, res.SuggestPullingFromSlave), 10),
	}
	if code == remoting.Success {
		if b.opts.TransferMsgByHeap {
			resp.Body = pullBodyOnHeap(res)
		} else {
			resp.BodyParts = pullBodyParts(res)
			resp.Release = res.Release // once written: the records stay mapped until then
			released = true
		}
	}
	return resp
}

// suggestBroker is a pull answer's suggestWhichBrokerId, as RocketMQ's
// PullMessageProcessor: with slaveReadEnable, the group's
// whichBrokerWhenConsumeSlowly for a consumer whose next messages are no
// longer in memory, else the group's brokerId; without, the master.
func (b *Broker) suggestBroker(group meta.SubscriptionGroupConfig, slow bool) int64 {
	switch {
	case !b.opts.SlaveReadEnable:
		return protocol.MasterID
	case slow:
		return group.WhichBrokerWhenConsumeSlowly
	default:
		return group.BrokerID
	}
}

// pullBodyOnHeap copies the records into one body (transferMsgByHeap=true).
func pullBodyOnHeap(res *store.GetResult) []byte {
	body := make([]byte, 0, res.BufferTotalSize)
	for _, m := range res.Messages {
		body = append(body, m.Bytes()...)
	}
	return body
}

// pullBodyParts returns the records as slices of the mapped CommitLog,
// records adjacent in memory joined into one slice, to be written with
// writev without a copy (transferMsgByHeap=false: RocketMQ's FileRegion).
func pullBodyParts(res *store.GetResult) [][]byte {
	parts := make([][]byte, 0, len(res.Messages))
	for _, m := range res.Messages {
		b := m.Bytes()
		if n := len(parts); n > 0 && len(b) > 0 && follows(parts[n-1], b) {
			// Both lie in mappings held until the response is released,
			// so the joined span is valid memory.
			parts[n-1] = unsafe.Slice(unsafe.SliceData(parts[n-1]), len(parts[n-1])+len(b))
			continue
		}
		parts = append(parts, b)
	}
	return parts
}

// follows reports whether b starts in memory right where a ends.
func follows(a, b []byte) bool {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), len(a)) == unsafe.Pointer(unsafe.SliceData(b))
}

// pullFilter sets p.filter from the request's subscription or, as push
// consumers send none, from the group's heartbeat.
func (b *Broker) pullFilter(p *pullRequest) *remoting.Command {
	if p.sysFlag&pullSubscription != 0 {
		return b.requestFilter(p)
	}
	g, ok := b.clients.Group(p.group)
	if !ok {
		return errResponse(remoting.SubscriptionNotExist, "the consumer's group info not exist")
	}
	if g.MessageModel == clients.Broadcasting && !b.groupBroadcastEnabled(p.group) {
		return errResponse(remoting.NoPermission, "the consumer group[%s] can not consume by broadcast way", p.group)
	}
	sub, ok := b.clients.Subscription(p.group, p.topic)
	if !ok {
		return errResponse(remoting.SubscriptionNotExist, "the consumer's subscription not exist")
	}
	if sub.SubVersion < p.subVersion {
		return errResponse(remoting.SubscriptionNotLatest, "the consumer's subscription not latest")
	}
	if !isTagType(sub.ExpressionType) {
		return b.subscriptionFilterSQL(p, sub)
	}
	if !sub.MatchesAll() {
		p.filter = subscriptionFilter{sub}
	}
	return nil
}

// subscriptionFilter filters by a heartbeat subscription's tag codes.
type subscriptionFilter struct{ sub clients.Subscription }

func (f subscriptionFilter) MatchTagsCode(code int64) bool { return f.sub.MatchesTagsCode(code) }

func (b *Broker) groupBroadcastEnabled(group string) bool {
	cfg, ok := b.groups.Get(group)
	return !ok || cfg.ConsumeBroadcastEnable
}

// tagFilter parses a TAG subscription expression: "*", "", or "a || b".
func tagFilter(expr string) store.Filter {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return nil
	}
	var tags []string
	for t := range strings.SplitSeq(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return store.NewTagFilter(tags...)
}
