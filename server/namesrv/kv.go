package namesrv

import (
	"maps"
	"sync"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// NamespaceOrderTopicConfig is the KV namespace of order-topic configs
// (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG): topic -> "brokerA:4;brokerB:4".
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// kvConfig is RocketMQ's KVConfigManager, in memory only: values set with
// PUT_KV_CONFIG last until the name server stops.
type kvConfig struct {
	mu     sync.RWMutex // guards tables
	tables map[string]map[string]string
}

func newKVConfig() *kvConfig {
	return &kvConfig{tables: make(map[string]map[string]string)}
}

func (kv *kvConfig) put(namespace, key, value string) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	t := kv.tables[namespace]
	if t == nil {
		t = make(map[string]string)
		kv.tables[namespace] = t
	}
	t[key] = value
}

func (kv *kvConfig) get(namespace, key string) (string, bool) {
	kv.mu.RLock()
	defer kv.mu.RUnlock()
	v, ok := kv.tables[namespace][key]
	return v, ok
}

func (kv *kvConfig) delete(namespace, key string) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if t := kv.tables[namespace]; t != nil {
		delete(t, key)
		if len(t) == 0 {
			delete(kv.tables, namespace)
		}
	}
}

// list returns a namespace as KVTable JSON, {"table":{...}}, or nil when
// the namespace is empty.
func (kv *kvConfig) list(namespace string) []byte {
	kv.mu.RLock()
	t := maps.Clone(kv.tables[namespace])
	kv.mu.RUnlock()
	if len(t) == 0 {
		return nil
	}
	return (&protocol.KVTable{Table: t}).AppendJSON(nil)
}
