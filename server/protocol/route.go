package protocol

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// QueueData is one broker's queues of a topic (RocketMQ's QueueData).
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	Perm           int    `json:"perm"`
	ReadQueueNums  int    `json:"readQueueNums"`
	TopicSysFlag   int    `json:"topicSysFlag"`
	WriteQueueNums int    `json:"writeQueueNums"`
}

// BrokerData is the addresses of one broker group by broker id, 0 being
// the master (RocketMQ's BrokerData).
type BrokerData struct {
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	BrokerName         string           `json:"brokerName"`
	Cluster            string           `json:"cluster"`
	EnableActingMaster bool             `json:"enableActingMaster"`
	ZoneName           string           `json:"zoneName,omitempty"`
}

// Clone returns b with its own copy of BrokerAddrs.
func (b BrokerData) Clone() BrokerData {
	b.BrokerAddrs = maps.Clone(b.BrokerAddrs)
	return b
}

// TopicRouteData is the answer to GET_ROUTEINFO_BY_TOPIC (RocketMQ's
// TopicRouteData).
type TopicRouteData struct {
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
}

// ClusterInfo is the answer to GET_BROKER_CLUSTER_INFO (RocketMQ's
// ClusterInfo): broker groups by name, broker names by cluster.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// TopicList is the answer to GET_ALL_TOPIC_LIST_FROM_NAMESERVER and
// GET_TOPICS_BY_CLUSTER (RocketMQ's TopicList).
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// The JSON bodies are written with fastjson.Writer as fastjson writes them
// in a Java name server: compact, keys sorted, null fields left out, and
// map keys that are numbers (broker ids) bare, {0:"addr"}, unless quoteIDs
// asks for the BrowserCompatible form {"0":"addr"} that Java sends to
// clients of version 4.9.4 and later. Slices and maps are written sorted,
// so the bytes are stable.

// AppendJSON appends r in fastjson's form.
func (r *TopicRouteData) AppendJSON(dst []byte, quoteIDs bool) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("brokerDatas")
	w.BeginArray()
	for i := range r.BrokerDatas {
		r.BrokerDatas[i].writeJSON(w, quoteIDs)
	}
	w.End()
	w.Key("filterServerTable")
	w.BeginObject()
	for _, k := range slices.Sorted(maps.Keys(r.FilterServerTable)) {
		w.Key(k)
		writeStrings(w, r.FilterServerTable[k])
	}
	w.End()
	if r.OrderTopicConf != "" {
		w.Key("orderTopicConf")
		w.String(r.OrderTopicConf)
	}
	w.Key("queueDatas")
	w.BeginArray()
	for _, q := range r.QueueDatas {
		q.writeJSON(w)
	}
	w.End()
	w.End()
	return w.Bytes()
}

// AppendJSON appends q in fastjson's form.
func (q QueueData) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	q.writeJSON(w)
	return w.Bytes()
}

func (q QueueData) writeJSON(w *fastjson.Writer) {
	w.BeginObject()
	w.Key("brokerName")
	w.String(q.BrokerName)
	w.Key("perm")
	w.Int(int64(q.Perm))
	w.Key("readQueueNums")
	w.Int(int64(q.ReadQueueNums))
	w.Key("topicSysFlag")
	w.Int(int64(q.TopicSysFlag))
	w.Key("writeQueueNums")
	w.Int(int64(q.WriteQueueNums))
	w.End()
}

// AppendJSON appends b in fastjson's form, broker ids bare unless
// quoteIDs.
func (b *BrokerData) AppendJSON(dst []byte, quoteIDs bool) []byte {
	w := fastjson.NewWriter(dst, false)
	b.writeJSON(w, quoteIDs)
	return w.Bytes()
}

func (b *BrokerData) writeJSON(w *fastjson.Writer, quoteIDs bool) {
	w.BeginObject()
	w.Key("brokerAddrs")
	if quoteIDs {
		w.BeginObject()
	} else {
		w.BeginIntMap()
	}
	for _, id := range slices.Sorted(maps.Keys(b.BrokerAddrs)) {
		if quoteIDs {
			w.Key(strconv.FormatInt(id, 10))
		} else {
			w.IntKey(id)
		}
		w.String(b.BrokerAddrs[id])
	}
	w.End()
	w.Key("brokerName")
	w.String(b.BrokerName)
	w.Key("cluster")
	w.String(b.Cluster)
	w.Key("enableActingMaster")
	w.Bool(b.EnableActingMaster)
	if b.ZoneName != "" {
		w.Key("zoneName")
		w.String(b.ZoneName)
	}
	w.End()
}

// AppendJSON appends c in fastjson's form, broker ids bare unless
// quoteIDs.
func (c *ClusterInfo) AppendJSON(dst []byte, quoteIDs bool) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("brokerAddrTable")
	w.BeginObject()
	for _, name := range slices.Sorted(maps.Keys(c.BrokerAddrTable)) {
		w.Key(name)
		bd := c.BrokerAddrTable[name]
		bd.writeJSON(w, quoteIDs)
	}
	w.End()
	w.Key("clusterAddrTable")
	w.BeginObject()
	for _, cluster := range slices.Sorted(maps.Keys(c.ClusterAddrTable)) {
		w.Key(cluster)
		writeStrings(w, c.ClusterAddrTable[cluster])
	}
	w.End()
	w.End()
	return w.Bytes()
}

// AppendJSON appends l in fastjson's form.
func (l *TopicList) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	if l.BrokerAddr != "" {
		w.Key("brokerAddr")
		w.String(l.BrokerAddr)
	}
	w.Key("topicList")
	writeStrings(w, l.TopicList)
	w.End()
	return w.Bytes()
}

func writeStrings(w *fastjson.Writer, ss []string) {
	w.BeginArray()
	for _, s := range ss {
		w.String(s)
	}
	w.End()
}

// DecodeTopicRouteData reads a TopicRouteData written by a Java or Go name
// server, bare or quoted broker ids alike.
func DecodeTopicRouteData(b []byte) (*TopicRouteData, error) {
	var r TopicRouteData
	if err := unmarshalFastJSON(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeClusterInfo reads a ClusterInfo, bare or quoted broker ids alike.
func DecodeClusterInfo(b []byte) (*ClusterInfo, error) {
	var c ClusterInfo
	if err := unmarshalFastJSON(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// ErrBadBody: a body does not decode.
var ErrBadBody = errors.New("protocol: malformed body")

// unmarshalFastJSON is json.Unmarshal for text fastjson wrote.
func unmarshalFastJSON(b []byte, v any) error {
	if err := fastjson.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBody, err)
	}
	return nil
}
