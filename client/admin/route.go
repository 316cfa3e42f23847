package admin

import (
	"slices"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// RouteView is a topic route with its master addresses resolved.
type RouteView struct {
	*protocol.TopicRouteData
	// Masters are the master addresses by broker name.
	Masters map[string]string
}

// NewRouteView resolves a route's masters.
func NewRouteView(r *protocol.TopicRouteData) *RouteView {
	return &RouteView{TopicRouteData: r, Masters: MasterAddrs(r.BrokerDatas)}
}

func (r *RouteView) queues(topic string, write bool) []protocol.MessageQueue {
	var out []protocol.MessageQueue
	for _, qd := range r.QueueDatas {
		n, perm := qd.ReadQueueNums, protocol.PermRead
		if write {
			n, perm = qd.WriteQueueNums, protocol.PermWrite
		}
		if qd.Perm&perm == 0 {
			continue
		}
		if _, ok := r.Masters[qd.BrokerName]; !ok {
			continue
		}
		for i := range n {
			out = append(out, protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: int32(i)})
		}
	}
	slices.SortFunc(out, CompareQueues)
	return out
}
