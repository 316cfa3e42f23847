package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// queueOffset asks a broker for an offset of a queue: GET_MAX_OFFSET,
// GET_MIN_OFFSET, or with a timestamp SEARCH_OFFSET_BY_TIMESTAMP.
func (c *Client) queueOffset(ctx context.Context, code int, addr, topic string, queueID int32, ts int64) (int64, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(int(queueID))}
	if code == remoting.SearchOffsetByTimestamp {
		ext["timestamp"] = strconv.FormatInt(ts, 10)
	}
	resp, err := c.broker(ctx, addr, code, ext, nil)
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s answered a bad offset %q", addr, resp.Ext("offset"))
	}
	return off, nil
}

// MaxOffset is the offset the next message of a queue gets (GET_MAX_OFFSET).
func (c *Client) MaxOffset(ctx context.Context, addr, topic string, queueID int32) (int64, error) {
	return c.queueOffset(ctx, remoting.GetMaxOffset, addr, topic, queueID, 0)
}

// MinOffset is the offset of a queue's oldest message (GET_MIN_OFFSET).
func (c *Client) MinOffset(ctx context.Context, addr, topic string, queueID int32) (int64, error) {
	return c.queueOffset(ctx, remoting.GetMinOffset, addr, topic, queueID, 0)
}

// SearchOffset is the offset of a queue's first message stored at or after
// timestamp (ms) (SEARCH_OFFSET_BY_TIMESTAMP).
func (c *Client) SearchOffset(ctx context.Context, addr, topic string, queueID int32, timestamp int64) (int64, error) {
	return c.queueOffset(ctx, remoting.SearchOffsetByTimestamp, addr, topic, queueID, timestamp)
}

// ViewMessage returns the message stored at a CommitLog offset
// (VIEW_MESSAGE_BY_ID), the offset part of an offset message id.
func (c *Client) ViewMessage(ctx context.Context, addr string, phyOffset int64) (*message.Message, error) {
	return c.ViewMessageOfTopic(ctx, addr, "", phyOffset)
}

// ViewMessageOfTopic is ViewMessage naming the message's topic, as
// RocketMQ 5's ViewMessageRequestHeader does: with access control, a user
// who may Get the topic may view its messages (without a topic, only a
// Super user).
func (c *Client) ViewMessageOfTopic(ctx context.Context, addr, topic string, phyOffset int64) (*message.Message, error) {
	ext := map[string]string{"offset": strconv.FormatInt(phyOffset, 10)}
	if topic != "" {
		ext["topic"] = topic
	}
	resp, err := c.broker(ctx, addr, remoting.ViewMessageByID, ext, nil)
	if err != nil {
		return nil, err
	}
	msgs, err := decodeMessages(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("message at %d on %s: %w", phyOffset, addr, err)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%s answered no message at offset %d", addr, phyOffset)
	}
	return msgs[0], nil
}

// QueryMessage returns up to maxNum messages of a topic on a broker with a
// key (or, with uniqKey, a UNIQ_KEY message id) stored between begin and
// end (ms) (QUERY_MESSAGE). None found is an empty result, not an error.
func (c *Client) QueryMessage(ctx context.Context, addr, topic, key string, maxNum int, begin, end int64, uniqKey bool) ([]*message.Message, error) {
	resp, err := c.broker(ctx, addr, remoting.QueryMessage, map[string]string{
		"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
		"beginTimestamp": strconv.FormatInt(begin, 10), "endTimestamp": strconv.FormatInt(end, 10),
		"_UNIQUE_KEY_QUERY": strconv.FormatBool(uniqKey),
	}, nil)
	if IsCode(err, remoting.QueryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeMessages(resp.Body)
}

// decodeMessages decodes concatenated stored records.
func decodeMessages(b []byte) ([]*message.Message, error) {
	var out []*message.Message
	for len(b) > 0 {
		m, n, err := message.Decode(b)
		if err != nil {
			return out, err
		}
		out = append(out, m)
		b = b[n:]
	}
	return out, nil
}

// Pull statuses (PullStatus).
const (
	PullFound     = "FOUND"
	PullNoNewMsg  = "NO_NEW_MSG"
	PullNoMatched = "NO_MATCHED_MSG"
	PullIllegal   = "OFFSET_ILLEGAL"
)

// PullResult is the answer to one pull.
type PullResult struct {
	Status          string
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Messages        []*message.Message
}

// Pull reads up to max messages of a queue from offset on, for group,
// without holding the request or committing an offset (PULL_MESSAGE with
// the subscription "*" in the request, as DefaultMQPullConsumer.pull).
func (c *Client) Pull(ctx context.Context, addr, group string, mq protocol.MessageQueue, offset int64, max int) (*PullResult, error) {
	resp, err := c.invoke(ctx, "broker", addr, remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": mq.Topic, "queueId": strconv.Itoa(int(mq.QueueID)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(max),
		"sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, nil))
	if err != nil {
		return nil, err
	}
	r := &PullResult{}
	switch resp.Code {
	case remoting.Success:
		r.Status = PullFound
	case remoting.PullNotFound:
		r.Status = PullNoNewMsg
	case remoting.PullRetryImmediately:
		r.Status = PullNoMatched
	case remoting.PullOffsetMoved:
		r.Status = PullIllegal
	default:
		return nil, &ResponseError{Addr: addr, Code: resp.Code, Remark: resp.Remark}
	}
	var perr error
	for key, p := range map[string]*int64{"nextBeginOffset": &r.NextBeginOffset, "minOffset": &r.MinOffset, "maxOffset": &r.MaxOffset} {
		if *p, perr = strconv.ParseInt(resp.Ext(key), 10, 64); perr != nil {
			return nil, fmt.Errorf("pull answer of %s: bad %s %q", addr, key, resp.Ext(key))
		}
	}
	if r.Status == PullFound {
		if r.Messages, err = decodeMessages(resp.Body); err != nil {
			return nil, fmt.Errorf("pull answer of %s: %w", addr, err)
		}
	}
	return r, nil
}

// SendRequest is one message to send.
type SendRequest struct {
	ProducerGroup string // "" means TOOLS_PRODUCER... as the admin tools use
	Queue         protocol.MessageQueue
	Body          []byte
	Tags, Keys    string
	// Properties are more user properties.
	Properties map[string]string
}

// SendResult is a broker's answer to a send (SendResult).
type SendResult struct {
	Status      string                `json:"sendStatus"`
	MsgID       string                `json:"msgId"`       // UNIQ_KEY
	OffsetMsgID string                `json:"offsetMsgId"` // store host and CommitLog offset
	Queue       protocol.MessageQueue `json:"messageQueue"`
	QueueOffset int64                 `json:"queueOffset"`
}

// ErrNoQueue: a topic has no queue to write to.
var ErrNoQueue = errors.New("no writable queue")

// Send sends one message to a queue of the broker at addr
// (SEND_MESSAGE_V2, the short header a..n as Java producers send it).
func (c *Client) Send(ctx context.Context, addr string, r SendRequest) (*SendResult, error) {
	group := r.ProducerGroup
	if group == "" {
		group = "TOOLS_PRODUCER"
	}
	uniq := c.ids.Next(time.Now())
	props := map[string]string{message.PropertyUniqClientMessageIDKeyIndex: uniq, "WAIT": "true"}
	for k, v := range r.Properties {
		props[k] = v
	}
	if r.Tags != "" {
		props[message.PropertyTags] = r.Tags
	}
	if r.Keys != "" {
		props[message.PropertyKeys] = r.Keys
	}
	resp, err := c.invoke(ctx, "broker", addr, remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": group, "b": r.Queue.Topic, "c": "TBW102", "d": "4", "e": strconv.Itoa(int(r.Queue.QueueID)),
		"f": "0", "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0",
		"i": message.EncodeProperties(props), "j": "0", "k": "false", "m": "false", "n": r.Queue.BrokerName,
	}, r.Body))
	if err != nil {
		return nil, err
	}
	res := &SendResult{MsgID: uniq, OffsetMsgID: resp.Ext("msgId"), Queue: r.Queue}
	switch resp.Code {
	case remoting.Success:
		res.Status = "SEND_OK"
	case remoting.FlushDiskTimeout:
		res.Status = "FLUSH_DISK_TIMEOUT"
	case remoting.FlushSlaveTimeout:
		res.Status = "FLUSH_SLAVE_TIMEOUT"
	case remoting.SlaveNotAvailable:
		res.Status = "SLAVE_NOT_AVAILABLE"
	default:
		return nil, &ResponseError{Addr: addr, Code: resp.Code, Remark: resp.Remark}
	}
	if q, err := strconv.Atoi(resp.Ext("queueId")); err == nil {
		res.Queue.QueueID = int32(q)
	}
	res.QueueOffset, _ = strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
	return res, nil
}

// ConsumerOffset is a group's committed offset of a queue
// (QUERY_CONSUMER_OFFSET); ok is false when the group has none.
func (c *Client) ConsumerOffset(ctx context.Context, addr, group string, mq protocol.MessageQueue) (offset int64, ok bool, err error) {
	resp, err := c.broker(ctx, addr, remoting.QueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": mq.Topic, "queueId": strconv.Itoa(int(mq.QueueID)),
	}, nil)
	if IsCode(err, remoting.QueryNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	offset, err = strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s answered a bad offset %q", addr, resp.Ext("offset"))
	}
	return offset, true, nil
}

// UpdateConsumerOffset commits a group's offset of a queue on a broker
// (UPDATE_CONSUMER_OFFSET).
func (c *Client) UpdateConsumerOffset(ctx context.Context, addr, group string, mq protocol.MessageQueue, offset int64) error {
	_, err := c.broker(ctx, addr, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": mq.Topic, "queueId": strconv.Itoa(int(mq.QueueID)),
		"commitOffset": strconv.FormatInt(offset, 10),
	}, nil)
	return err
}
