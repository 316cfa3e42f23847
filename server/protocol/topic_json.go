package protocol

import (
	"maps"
	"slices"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// WriteJSON writes v as fastjson writes a DataVersion.
func (v DataVersion) WriteJSON(w *fastjson.Writer) {
	w.BeginObject()
	w.Key("counter")
	w.Int(v.Counter)
	w.Key("stateVersion")
	w.Int(v.StateVersion)
	w.Key("timestamp")
	w.Int(v.Timestamp)
	w.End()
}

// WriteJSON writes c as fastjson writes a TopicConfig bean: fields in
// alphabetical order, attributes always an object.
func (c *TopicConfig) WriteJSON(w *fastjson.Writer) {
	w.BeginObject()
	w.Key("attributes")
	w.BeginObject()
	for _, k := range slices.Sorted(maps.Keys(c.Attributes)) {
		w.Key(k)
		w.String(c.Attributes[k])
	}
	w.End()
	w.Key("order")
	w.Bool(c.Order)
	w.Key("perm")
	w.Int(int64(c.Perm))
	w.Key("readQueueNums")
	w.Int(int64(c.ReadQueueNums))
	w.Key("topicFilterType")
	w.String(c.TopicFilterType)
	w.Key("topicName")
	w.String(c.TopicName)
	w.Key("topicSysFlag")
	w.Int(int64(c.TopicSysFlag))
	w.Key("writeQueueNums")
	w.Int(int64(c.WriteQueueNums))
	w.End()
}

// WriteJSON writes the wrapper: its data version and its topics by name.
func (t *TopicConfigSerializeWrapper) WriteJSON(w *fastjson.Writer) {
	w.BeginObject()
	w.Key("dataVersion")
	t.DataVersion.WriteJSON(w)
	w.Key("topicConfigTable")
	w.BeginObject()
	for _, name := range slices.Sorted(maps.Keys(t.TopicConfigTable)) {
		c := t.TopicConfigTable[name]
		w.Key(name)
		c.WriteJSON(w)
	}
	w.End()
	w.End()
}

// AppendJSON appends r in its plain JSON form, as Java brokers send it by
// default (compressedRegister off).
func (r *RegisterBrokerBody) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("filterServerList")
	writeStrings(w, r.FilterServerList)
	w.Key("topicConfigSerializeWrapper")
	r.TopicConfigSerializeWrapper.WriteJSON(w)
	w.End()
	return w.Bytes()
}
