package controller

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/rocketstore/rocketstore/server/protocol"
)

func encode(v any) []byte {
	b, _ := json.Marshal(v) // plain structs of strings, numbers and maps
	return b
}

func syncStateSetBody(g *Group) []byte {
	return encode(protocol.SyncStateSetBody{SyncStateSet: nonNil(g.SyncStateSet), SyncStateSetEpoch: g.SSEpoch})
}

func memberGroup(g *Group) *protocol.BrokerMemberGroup {
	m := &protocol.BrokerMemberGroup{Cluster: g.Cluster, BrokerName: g.Name, BrokerAddrs: map[int64]string{}}
	for id, r := range g.Replicas {
		m.BrokerAddrs[id] = r.Addr
	}
	return m
}

func replicasInfo(g *Group, alive func(id int64) bool) protocol.ReplicasInfo {
	ri := protocol.ReplicasInfo{
		MasterBrokerID: g.Master, MasterAddress: g.MasterAddr(), MasterEpoch: g.MasterEpoch,
		SyncStateSetEpoch: g.SSEpoch, InSyncReplicas: []protocol.ReplicaIdentity{}, NotInSyncReplicas: []protocol.ReplicaIdentity{},
	}
	for _, id := range g.IDs() {
		r := protocol.ReplicaIdentity{BrokerName: g.Name, BrokerID: id, BrokerAddress: g.Replicas[id].Addr, Alive: alive(id)}
		if g.InSync(id) {
			ri.InSyncReplicas = append(ri.InSyncReplicas, r)
		} else {
			ri.NotInSyncReplicas = append(ri.NotInSyncReplicas, r)
		}
	}
	return ri
}

func nonNil(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return slices.Clone(s)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
