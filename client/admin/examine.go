package admin

import (
	"context"
	"maps"
	"slices"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Route-wide calls, as DefaultMQAdminExtImpl makes them: ask every master
// of a topic's route and merge the answers.

// GroupConsumeStats merges a group's progress over the masters serving its
// retry topic (or, if that has no route, the topic)
// (DefaultMQAdminExt.examineConsumeStats).
func (c *Client) GroupConsumeStats(ctx context.Context, group, topic string) (*protocol.ConsumeStats, error) {
	route, err := c.TopicRoute(ctx, "%RETRY%"+group)
	if err != nil && topic != "" && IsCode(err, remoting.TopicNotExist) {
		route, err = c.TopicRoute(ctx, topic)
	}
	if err != nil {
		return nil, err
	}
	out := &protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, name := range slices.Sorted(maps.Keys(MasterAddrs(route.BrokerDatas))) {
		cs, err := c.ConsumeStats(ctx, MasterAddrs(route.BrokerDatas)[name], group, topic)
		if err != nil {
			return nil, err
		}
		maps.Copy(out.OffsetTable, cs.OffsetTable)
		out.ConsumeTps += cs.ConsumeTps
	}
	return out, nil
}

// TopicStatsAll merges a topic's queue offsets over the masters of its
// route (DefaultMQAdminExt.examineTopicStats).
func (c *Client) TopicStatsAll(ctx context.Context, topic string) (map[protocol.MessageQueue]protocol.TopicOffset, error) {
	route, err := c.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[protocol.MessageQueue]protocol.TopicOffset{}
	for _, addr := range MasterAddrs(route.BrokerDatas) {
		ts, err := c.TopicStats(ctx, addr, topic)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, ts.OffsetTable)
	}
	return out, nil
}

// GroupConsumerConnection asks a master of the group's retry topic for the
// group's connections (DefaultMQAdminExt.examineConsumerConnectionInfo).
func (c *Client) GroupConsumerConnection(ctx context.Context, group string) (*protocol.ConsumerConnection, error) {
	route, err := c.TopicRoute(ctx, "%RETRY%"+group)
	if err != nil {
		return nil, err
	}
	var last error
	for _, addr := range MasterAddrs(route.BrokerDatas) {
		cc, err := c.ConsumerConnection(ctx, addr, group)
		if err == nil {
			return cc, nil
		}
		last = err
	}
	return nil, last
}

// ResetOffsetByTimeAll resets a group's offsets of a topic on every master
// of the topic's route (DefaultMQAdminExt.resetOffsetByTimestamp).
func (c *Client) ResetOffsetByTimeAll(ctx context.Context, topic, group string, timestamp int64, force bool) (map[protocol.MessageQueue]int64, error) {
	route, err := c.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[protocol.MessageQueue]int64{}
	for _, addr := range MasterAddrs(route.BrokerDatas) {
		t, err := c.ResetOffsetByTime(ctx, addr, topic, group, timestamp, force)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, t)
	}
	return out, nil
}

// WriteQueues lists a route's queues that take sends, sorted.
func WriteQueues(topic string, route *RouteView) []protocol.MessageQueue {
	return route.queues(topic, true)
}

// ReadQueues lists a route's queues that serve pulls, sorted.
func ReadQueues(topic string, route *RouteView) []protocol.MessageQueue {
	return route.queues(topic, false)
}

// ResetOffsetByTimeOffline moves a group's committed offsets of a topic to
// the first message stored at or after timestamp, queue by queue, for a
// group with no consumer online (RocketMQ's resetOffsetByTimestampOld,
// which mqadmin falls back to on CONSUMER_NOT_ONLINE). Without force an
// offset only moves back. A consumer that starts later reads from there.
func (c *Client) ResetOffsetByTimeOffline(ctx context.Context, topic, group string, timestamp int64, force bool) (map[protocol.MessageQueue]int64, error) {
	route, err := c.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	rv := NewRouteView(route)
	out := map[protocol.MessageQueue]int64{}
	for _, mq := range ReadQueues(topic, rv) {
		addr := rv.Masters[mq.BrokerName]
		to, err := c.SearchOffset(ctx, addr, topic, mq.QueueID, timestamp)
		if err != nil {
			return nil, err
		}
		cur, ok, err := c.ConsumerOffset(ctx, addr, group, mq)
		if err != nil {
			return nil, err
		}
		if ok && !force && to >= cur {
			out[mq] = cur
			continue
		}
		if err := c.UpdateConsumerOffset(ctx, addr, group, mq, to); err != nil {
			return nil, err
		}
		out[mq] = to
	}
	return out, nil
}
