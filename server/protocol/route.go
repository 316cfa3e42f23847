package protocol

import (
	"bytes"
	"encoding/json"
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

// The JSON bodies are written as fastjson writes them in a Java name
// server: compact, keys sorted, null fields left out, and map keys that are
// numbers (broker ids) bare, {0:"addr"}, unless quoteIDs asks for the
// BrowserCompatible form {"0":"addr"} that Java sends to clients of
// version 4.9.4 and later. Slices and maps are written sorted, so the
// bytes are stable.

// AppendJSON appends r in fastjson's form.
func (r *TopicRouteData) AppendJSON(dst []byte, quoteIDs bool) []byte {
	dst = append(dst, `{"brokerDatas":[`...)
	for i := range r.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.BrokerDatas[i].AppendJSON(dst, quoteIDs)
	}
	dst = append(dst, `],"filterServerTable":{`...)
	for i, k := range slices.Sorted(maps.Keys(r.FilterServerTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendStrings(dst, r.FilterServerTable[k])
	}
	dst = append(dst, '}')
	if r.OrderTopicConf != "" {
		dst = append(dst, `,"orderTopicConf":`...)
		dst = appendString(dst, r.OrderTopicConf)
	}
	dst = append(dst, `,"queueDatas":[`...)
	for i, q := range r.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = q.AppendJSON(dst)
	}
	return append(dst, "]}"...)
}

// AppendJSON appends q in fastjson's form.
func (q QueueData) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = appendString(dst, q.BrokerName)
	dst = append(dst, `,"perm":`...)
	dst = strconv.AppendInt(dst, int64(q.Perm), 10)
	dst = append(dst, `,"readQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.ReadQueueNums), 10)
	dst = append(dst, `,"topicSysFlag":`...)
	dst = strconv.AppendInt(dst, int64(q.TopicSysFlag), 10)
	dst = append(dst, `,"writeQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.WriteQueueNums), 10)
	return append(dst, '}')
}

// AppendJSON appends b in fastjson's form, broker ids bare unless
// quoteIDs.
func (b *BrokerData) AppendJSON(dst []byte, quoteIDs bool) []byte {
	dst = append(dst, `{"brokerAddrs":{`...)
	for i, id := range slices.Sorted(maps.Keys(b.BrokerAddrs)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		if quoteIDs {
			dst = append(dst, '"')
		}
		dst = strconv.AppendInt(dst, id, 10)
		if quoteIDs {
			dst = append(dst, '"')
		}
		dst = append(dst, ':')
		dst = appendString(dst, b.BrokerAddrs[id])
	}
	dst = append(dst, `},"brokerName":`...)
	dst = appendString(dst, b.BrokerName)
	dst = append(dst, `,"cluster":`...)
	dst = appendString(dst, b.Cluster)
	dst = append(dst, `,"enableActingMaster":`...)
	dst = strconv.AppendBool(dst, b.EnableActingMaster)
	if b.ZoneName != "" {
		dst = append(dst, `,"zoneName":`...)
		dst = appendString(dst, b.ZoneName)
	}
	return append(dst, '}')
}

// AppendJSON appends c in fastjson's form, broker ids bare unless
// quoteIDs.
func (c *ClusterInfo) AppendJSON(dst []byte, quoteIDs bool) []byte {
	dst = append(dst, `{"brokerAddrTable":{`...)
	for i, name := range slices.Sorted(maps.Keys(c.BrokerAddrTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, name)
		dst = append(dst, ':')
		bd := c.BrokerAddrTable[name]
		dst = bd.AppendJSON(dst, quoteIDs)
	}
	dst = append(dst, `},"clusterAddrTable":{`...)
	for i, cluster := range slices.Sorted(maps.Keys(c.ClusterAddrTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, cluster)
		dst = append(dst, ':')
		dst = appendStrings(dst, c.ClusterAddrTable[cluster])
	}
	return append(dst, "}}"...)
}

// AppendJSON appends l in fastjson's form.
func (l *TopicList) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if l.BrokerAddr != "" {
		dst = append(dst, `"brokerAddr":`...)
		dst = appendString(dst, l.BrokerAddr)
		dst = append(dst, ',')
	}
	dst = append(dst, `"topicList":`...)
	dst = appendStrings(dst, l.TopicList)
	return append(dst, '}')
}

// appendString appends s as a JSON string (encoding/json's escaping,
// without its HTML escaping).
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			var buf bytes.Buffer // rare: escapes or non-ASCII
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
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
