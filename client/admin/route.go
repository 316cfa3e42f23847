package admin

import (
	"slices"

	"github.com/rocketstore/rocketstore/server/namesrv"
)

// RouteView is a topic route with its master addresses resolved.
type RouteView struct {
	*namesrv.TopicRouteData
	// Masters are the master addresses by broker name.
	Masters map[string]string
}

// NewRouteView resolves a route's masters.
func NewRouteView(r *namesrv.TopicRouteData) *RouteView {
	return &RouteView{TopicRouteData: r, Masters: MasterAddrs(r.BrokerDatas)}
}

func (r *RouteView) queues(topic string, write bool) []MessageQueue {
	var out []MessageQueue
	for _, qd := range r.QueueDatas {
		n, perm := qd.ReadQueueNums, namesrv.PermRead
		if write {
			n, perm = qd.WriteQueueNums, namesrv.PermWrite
		}
		if qd.Perm&perm == 0 {
			continue
		}
		if _, ok := r.Masters[qd.BrokerName]; !ok {
			continue
		}
		for i := range n {
			out = append(out, MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
		}
	}
	slices.SortFunc(out, MessageQueue.Compare)
	return out
}
