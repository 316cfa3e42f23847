package controller

import (
	"encoding/json"
	"slices"
	"strconv"
)

// SyncStateSetBody is upstream's SyncStateSet body:
// {"syncStateSet":[ids],"syncStateSetEpoch":n}.
type SyncStateSetBody struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// BrokerMemberGroup is upstream's BrokerMemberGroup: a group's ids and
// addresses.
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// ElectMasterResponseBody is upstream's ElectMasterResponseBody.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup,omitempty"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// ReplicaIdentity is one replica in BrokerReplicasInfo.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// ReplicasInfo is one group in BrokerReplicasInfo.
type ReplicasInfo struct {
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterAddress     string            `json:"masterAddress"`
	MasterEpoch       int32             `json:"masterEpoch"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// BrokerReplicasInfo is GET_SYNC_STATE_DATA's response body.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

func encode(v any) []byte {
	b, _ := json.Marshal(v) // plain structs of strings, numbers and maps
	return b
}

func syncStateSetBody(g *Group) []byte {
	return encode(SyncStateSetBody{SyncStateSet: nonNil(g.SyncStateSet), SyncStateSetEpoch: g.SSEpoch})
}

func memberGroup(g *Group) *BrokerMemberGroup {
	m := &BrokerMemberGroup{Cluster: g.Cluster, BrokerName: g.Name, BrokerAddrs: map[int64]string{}}
	for id, r := range g.Replicas {
		m.BrokerAddrs[id] = r.Addr
	}
	return m
}

func replicasInfo(g *Group, alive func(id int64) bool) ReplicasInfo {
	ri := ReplicasInfo{
		MasterBrokerID: g.Master, MasterAddress: g.MasterAddr(), MasterEpoch: g.MasterEpoch,
		SyncStateSetEpoch: g.SSEpoch, InSyncReplicas: []ReplicaIdentity{}, NotInSyncReplicas: []ReplicaIdentity{},
	}
	for _, id := range g.IDs() {
		r := ReplicaIdentity{BrokerName: g.Name, BrokerID: id, BrokerAddress: g.Replicas[id].Addr, Alive: alive(id)}
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
