package protocol

// Controller mode (RocketMQ 5, RIP-44): the bodies of the controller's
// requests, JSON as upstream writes them.

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
