package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// TopicRoute asks the name servers for a topic's route
// (GET_ROUTEINFO_BY_TOPIC). An unknown topic is a ResponseError with code
// TOPIC_NOT_EXIST.
func (c *Client) TopicRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	resp, err := c.namesrv(ctx, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return nil, err
	}
	r, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("route of %s: %w", topic, err)
	}
	return r, nil
}

// ClusterInfo asks the name servers for every broker by cluster
// (GET_BROKER_CLUSTER_INFO).
func (c *Client) ClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	resp, err := c.namesrv(ctx, remoting.GetBrokerClusterInfo, nil)
	if err != nil {
		return nil, err
	}
	ci, err := protocol.DecodeClusterInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	return ci, nil
}

// TopicList asks the name servers for every topic
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), sorted.
func (c *Client) TopicList(ctx context.Context) ([]string, error) {
	resp, err := c.namesrv(ctx, remoting.GetAllTopicListFromNameServer, nil)
	if err != nil {
		return nil, err
	}
	var l protocol.TopicList
	if err := fastjson.Unmarshal(resp.Body, &l); err != nil {
		return nil, fmt.Errorf("topic list: %w", err)
	}
	slices.Sort(l.TopicList)
	return l.TopicList, nil
}

// DeleteTopicInNamesrv removes a topic's route from every name server
// (DELETE_TOPIC_IN_NAMESRV).
func (c *Client) DeleteTopicInNamesrv(ctx context.Context, topic string) error {
	for _, addr := range c.ns {
		if _, err := c.call(ctx, "name server", addr, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": topic}, nil)); err != nil {
			return err
		}
	}
	return nil
}

// MasterAddrs returns the master address of each broker group of a route
// or cluster info, by broker name (BrokerData.selectBrokerAddr picks the
// master when there is one, else any slave).
func MasterAddrs(brokers []protocol.BrokerData) map[string]string {
	out := make(map[string]string, len(brokers))
	for _, bd := range brokers {
		if a, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			out[bd.BrokerName] = a
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			out[bd.BrokerName] = bd.BrokerAddrs[id]
			break
		}
	}
	return out
}

// ClusterMasters returns the master addresses of a cluster's brokers, by
// broker name (CommandUtil.fetchMasterAddrByClusterName).
func (c *Client) ClusterMasters(ctx context.Context, cluster string) (map[string]string, error) {
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	names, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return nil, fmt.Errorf("no cluster %q on the name server", cluster)
	}
	var bds []protocol.BrokerData
	for _, n := range names {
		if bd, ok := ci.BrokerAddrTable[n]; ok {
			bds = append(bds, bd)
		}
	}
	return MasterAddrs(bds), nil
}
