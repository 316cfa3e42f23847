package protocol

import "encoding/json"

// Permission bits of a topic on a broker (RocketMQ's PermName).
const (
	PermPriority = 1 << 3
	PermRead     = 1 << 2
	PermWrite    = 1 << 1
	PermInherit  = 1 << 0
)

// MasterID is the broker id of a master (MixAll.MASTER_ID).
const MasterID = 0

// DataVersion is RocketMQ's DataVersion: a broker bumps it whenever its
// topic configs change, so the name server can skip unchanged ones.
type DataVersion struct {
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
}

// TopicConfig is RocketMQ's TopicConfig, as a broker registers it.
type TopicConfig struct {
	Attributes      map[string]string `json:"attributes"`
	Order           bool              `json:"order"`
	Perm            int               `json:"perm"`
	ReadQueueNums   int               `json:"readQueueNums"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicName       string            `json:"topicName"`
	TopicSysFlag    int               `json:"topicSysFlag"`
	WriteQueueNums  int               `json:"writeQueueNums"`
}

// UnmarshalJSON reads a TopicConfig, with Java's defaults for absent
// fields (16 queues each way, perm read|write, SINGLE_TAG).
func (t *TopicConfig) UnmarshalJSON(b []byte) error {
	type plain TopicConfig
	p := plain{ReadQueueNums: 16, WriteQueueNums: 16, Perm: PermRead | PermWrite, TopicFilterType: "SINGLE_TAG"}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = TopicConfig(p)
	return nil
}

// TopicConfigSerializeWrapper is RocketMQ's TopicConfigSerializeWrapper:
// a broker's topic configs by name, and their data version.
type TopicConfigSerializeWrapper struct {
	DataVersion      DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
}

// RegisterBrokerBody is the body of REGISTER_BROKER (RocketMQ's
// RegisterBrokerBody). Static-topic mappings, which Java 5 brokers add,
// are read and ignored.
type RegisterBrokerBody struct {
	FilterServerList            []string                    `json:"filterServerList"`
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
}
