package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// CreateTopic creates or updates a topic on a broker
// (UPDATE_AND_CREATE_TOPIC), with CreateTopicRequestHeader's fields.
func (c *Client) CreateTopic(ctx context.Context, addr string, cfg protocol.TopicConfig) error {
	if cfg.TopicFilterType == "" {
		cfg.TopicFilterType = "SINGLE_TAG"
	}
	ext := map[string]string{
		"topic":           cfg.TopicName,
		"defaultTopic":    "TBW102",
		"readQueueNums":   strconv.Itoa(cfg.ReadQueueNums),
		"writeQueueNums":  strconv.Itoa(cfg.WriteQueueNums),
		"perm":            strconv.Itoa(cfg.Perm),
		"topicFilterType": cfg.TopicFilterType,
		"topicSysFlag":    strconv.Itoa(cfg.TopicSysFlag),
		"order":           strconv.FormatBool(cfg.Order),
	}
	if len(cfg.Attributes) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(cfg.Attributes)) {
			parts = append(parts, "+"+k+"="+cfg.Attributes[k])
		}
		ext["attributes"] = strings.Join(parts, ",")
	}
	_, err := c.broker(ctx, addr, remoting.UpdateAndCreateTopic, ext, nil)
	return err
}

// DeleteTopicInBroker deletes a topic on a broker (DELETE_TOPIC_IN_BROKER).
func (c *Client) DeleteTopicInBroker(ctx context.Context, addr, topic string) error {
	_, err := c.broker(ctx, addr, remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)
	return err
}

// BrokerRuntimeInfo returns a broker's runtime figures
// (GET_BROKER_RUNTIME_INFO: KVTable).
func (c *Client) BrokerRuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := c.broker(ctx, addr, remoting.GetBrokerRuntimeInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	var kv protocol.KVTable
	if err := fastjson.Unmarshal(resp.Body, &kv); err != nil {
		return nil, fmt.Errorf("runtime info of %s: %w", addr, err)
	}
	return kv.Table, nil
}

// TopicStats returns the offsets of a topic's queues on a broker
// (GET_TOPIC_STATS_INFO: TopicStatsTable).
func (c *Client) TopicStats(ctx context.Context, addr, topic string) (*protocol.TopicStatsTable, error) {
	resp, err := c.broker(ctx, addr, remoting.GetTopicStatsInfo, map[string]string{"topic": topic}, nil)
	if err != nil {
		return nil, err
	}
	ts, err := protocol.DecodeTopicStatsTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("topic stats of %s on %s: %w", topic, addr, err)
	}
	return ts, nil
}

// ConsumeStats returns a group's progress on a broker, for one topic or
// (topic "") all it consumes (GET_CONSUME_STATS).
func (c *Client) ConsumeStats(ctx context.Context, addr, group, topic string) (*protocol.ConsumeStats, error) {
	ext := map[string]string{"consumerGroup": group}
	if topic != "" {
		ext["topic"] = topic
	}
	resp, err := c.broker(ctx, addr, remoting.GetConsumeStats, ext, nil)
	if err != nil {
		return nil, err
	}
	cs, err := protocol.DecodeConsumeStats(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("consume stats of %s on %s: %w", group, addr, err)
	}
	return cs, nil
}

// ConsumerConnection returns the connections and subscriptions of a
// consumer group on a broker (GET_CONSUMER_CONNECTION_LIST).
func (c *Client) ConsumerConnection(ctx context.Context, addr, group string) (*protocol.ConsumerConnection, error) {
	resp, err := c.broker(ctx, addr, remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": group}, nil)
	if err != nil {
		return nil, err
	}
	var cc protocol.ConsumerConnection
	if err := fastjson.Unmarshal(resp.Body, &cc); err != nil {
		return nil, fmt.Errorf("consumer connections of %s on %s: %w", group, addr, err)
	}
	return &cc, nil
}

// ProducerConnection returns the connections of a producer group on a
// broker (GET_PRODUCER_CONNECTION_LIST).
func (c *Client) ProducerConnection(ctx context.Context, addr, group string) (*protocol.ProducerConnection, error) {
	resp, err := c.broker(ctx, addr, remoting.GetProducerConnectionList, map[string]string{"producerGroup": group}, nil)
	if err != nil {
		return nil, err
	}
	var pc protocol.ProducerConnection
	if err := fastjson.Unmarshal(resp.Body, &pc); err != nil {
		return nil, fmt.Errorf("producer connections of %s on %s: %w", group, addr, err)
	}
	return &pc, nil
}

// CreateSubscriptionGroup creates or updates a consumer group's config on
// a broker (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, the config as the body).
func (c *Client) CreateSubscriptionGroup(ctx context.Context, addr string, cfg SubscriptionGroupConfig) error {
	body, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = c.broker(ctx, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, body)
	return err
}

// DeleteSubscriptionGroup deletes a consumer group's config on a broker,
// and with cleanOffset its committed offsets (DELETE_SUBSCRIPTIONGROUP).
func (c *Client) DeleteSubscriptionGroup(ctx context.Context, addr, group string, cleanOffset bool) error {
	_, err := c.broker(ctx, addr, remoting.DeleteSubscriptionGroup, map[string]string{
		"groupName": group, "cleanOffset": strconv.FormatBool(cleanOffset),
	}, nil)
	return err
}

// ResetOffsetByTime asks a broker to move a group's offsets of a topic to
// the first message stored at or after timestamp (ms) and to tell the
// group's online consumers (INVOKE_BROKER_TO_RESET_OFFSET). It returns the
// new offsets. A group with no consumer online answers CONSUMER_NOT_ONLINE
// on Apache RocketMQ.
func (c *Client) ResetOffsetByTime(ctx context.Context, addr, topic, group string, timestamp int64, force bool) (map[protocol.MessageQueue]int64, error) {
	resp, err := c.broker(ctx, addr, remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": topic, "group": group, "timestamp": strconv.FormatInt(timestamp, 10),
		"isForce": strconv.FormatBool(force), "queueId": "-1", "offset": "-1",
	}, nil)
	if err != nil {
		return nil, err
	}
	if len(resp.Body) == 0 {
		return map[protocol.MessageQueue]int64{}, nil
	}
	body, err := protocol.DecodeResetOffsetBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reset offsets of %s on %s: %w", group, addr, err)
	}
	return body.OffsetTable, nil
}

// BrokerConfig returns a broker's config (GET_BROKER_CONFIG: properties
// text).
func (c *Client) BrokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := c.broker(ctx, addr, remoting.GetBrokerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return parseProperties(string(resp.Body)), nil
}

// UpdateBrokerConfig changes broker config keys at run time
// (UPDATE_BROKER_CONFIG, the keys as properties text).
func (c *Client) UpdateBrokerConfig(ctx context.Context, addr string, props map[string]string) error {
	_, err := c.broker(ctx, addr, remoting.UpdateBrokerConfig, nil, formatProperties(props))
	return err
}

// QueryTopicConsumeByWho returns the groups consuming a topic on a broker
// (QUERY_TOPIC_CONSUME_BY_WHO).
func (c *Client) QueryTopicConsumeByWho(ctx context.Context, addr, topic string) ([]string, error) {
	resp, err := c.broker(ctx, addr, remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil)
	if err != nil {
		return nil, err
	}
	var gl protocol.GroupList
	if err := fastjson.Unmarshal(resp.Body, &gl); err != nil {
		return nil, err
	}
	slices.Sort(gl.GroupList)
	return gl.GroupList, nil
}

// ConsumerRunningInfo asks a consumer, through a broker it is connected
// to, what it is doing: its properties and the queues it holds
// (GET_CONSUMER_RUNNING_INFO, forwarded by the broker to the client).
func (c *Client) ConsumerRunningInfo(ctx context.Context, addr, group, clientID string) (*protocol.ConsumerRunningInfo, error) {
	resp, err := c.broker(ctx, addr, remoting.GetConsumerRunningInfo, map[string]string{
		"consumerGroup": group, "clientId": clientID, "jstackEnable": "false",
	}, nil)
	if err != nil {
		return nil, err
	}
	info, err := protocol.DecodeConsumerRunningInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("running info of %s in %s: %w", clientID, group, err)
	}
	return info, nil
}

// ResetOffsetByQueueID sets a group's offset of one queue on a broker and
// tells the group's online consumers (DefaultMQAdminExt.resetOffsetByQueueId:
// UPDATE_CONSUMER_OFFSET, then INVOKE_BROKER_TO_RESET_OFFSET with the
// queue id and offset). A group with no consumer online keeps the
// committed offset.
func (c *Client) ResetOffsetByQueueID(ctx context.Context, addr, group string, mq protocol.MessageQueue, offset int64) error {
	if err := c.UpdateConsumerOffset(ctx, addr, group, mq, offset); err != nil {
		return err
	}
	_, err := c.broker(ctx, addr, remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": mq.Topic, "group": group, "timestamp": "0", "isForce": "false",
		"queueId": strconv.Itoa(int(mq.QueueID)), "offset": strconv.FormatInt(offset, 10),
	}, nil)
	if IsCode(err, remoting.ConsumerNotOnline) {
		return nil
	}
	return err
}
