package meta

import (
	"maps"
	"slices"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// The writers below put fields in alphabetical order, as fastjson does
// (SortField), and leave out what fastjson leaves out (null fields).

func writeDataVersion(w *fastjson.Writer, v protocol.DataVersion) { v.WriteJSON(w) }

func writeStringMap(w *fastjson.Writer, m map[string]string) {
	w.BeginObject()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.Key(k)
		w.String(m[k])
	}
	w.End()
}

// writeTopicConfig writes TopicConfig as Java's TopicConfig bean.
func writeTopicConfig(w *fastjson.Writer, c *protocol.TopicConfig) { c.WriteJSON(w) }

// writeTopicWrapper writes TopicConfigSerializeWrapper: the layout of
// topics.json and of the GET_ALL_TOPIC_CONFIG body.
func writeTopicWrapper(w *fastjson.Writer, table map[string]protocol.TopicConfig, v protocol.DataVersion) {
	w.BeginObject()
	w.Key("dataVersion")
	writeDataVersion(w, v)
	w.Key("topicConfigTable")
	w.BeginObject()
	for _, name := range slices.Sorted(maps.Keys(table)) {
		c := table[name]
		w.Key(name)
		writeTopicConfig(w, &c)
	}
	w.End()
	w.End()
}

// nextVersion is DataVersion.nextVersion: the counter up by one, a new
// timestamp, and the state version of the store, 0 here (it counts
// controller-mode role changes).
func nextVersion(v *protocol.DataVersion) {
	v.Counter++
	v.StateVersion = 0
	v.Timestamp = time.Now().UnixMilli()
}
