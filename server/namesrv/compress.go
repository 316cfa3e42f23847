package namesrv

import (
	"bytes"
	"cmp"
	"compress/zlib"
	"encoding/binary"
	"maps"
	"slices"
	"strconv"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// EncodeRegisterBrokerBodyCompressed writes b as a Java broker does with
// compressedRegister on (RegisterBrokerBody.encode(true)), the form
// DecodeRegisterBrokerBody reads with compressed set: a zlib stream of
// the data version JSON, the topic count, each topic in TopicConfig's
// "name read write perm filterType attributesJSON" form, the filter
// server list JSON and an empty static-topic mapping count, each item
// after its int32 length. The string form carries neither topicSysFlag
// nor order, as in RocketMQ. Topics go sorted by name.
func EncodeRegisterBrokerBodyCompressed(b *protocol.RegisterBrokerBody) []byte {
	var raw []byte
	chunk := func(p []byte) {
		raw = binary.BigEndian.AppendUint32(raw, uint32(len(p)))
		raw = append(raw, p...)
	}
	w := fastjson.NewWriter(nil, false)
	b.TopicConfigSerializeWrapper.DataVersion.WriteJSON(w)
	chunk(w.Bytes())
	table := b.TopicConfigSerializeWrapper.TopicConfigTable
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(table)))
	var line []byte
	for _, name := range slices.Sorted(maps.Keys(table)) {
		tc := table[name]
		line = append(line[:0], name...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(tc.ReadQueueNums), 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(tc.WriteQueueNums), 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(tc.Perm), 10)
		line = append(line, ' ')
		line = append(line, cmp.Or(tc.TopicFilterType, "SINGLE_TAG")...)
		line = append(line, ' ')
		aw := fastjson.NewWriter(line, false)
		aw.BeginObject()
		for _, k := range slices.Sorted(maps.Keys(tc.Attributes)) {
			aw.Key(k)
			aw.String(tc.Attributes[k])
		}
		aw.End()
		line = aw.Bytes()
		chunk(line)
	}
	fw := fastjson.NewWriter(nil, false)
	fw.BeginArray()
	for _, s := range b.FilterServerList {
		fw.String(s)
	}
	fw.End()
	chunk(fw.Bytes())
	raw = binary.BigEndian.AppendUint32(raw, 0) // no static-topic mappings

	var out bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&out, zlib.DefaultCompression) // the level is valid
	zw.Write(raw)                                               // a bytes.Buffer takes everything
	zw.Close()
	return out.Bytes()
}
