package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// javaRegisterBody is a RegisterBrokerBody as fastjson writes it in a Java
// 5 broker with a static topic: its mapping info has an int-keyed map.
const javaRegisterBody = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},` +
	`"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000001},` +
	`"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},` +
	`"TBW102":{"attributes":{},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}},` +
	`"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{"S":{"bname":"b","currIdMap":{0:0},"epoch":1,"scope":"__global__","topic":"S","totalQueues":1}}}}`

func TestDecodeRegisterBrokerBody_JavaJSON(t *testing.T) {
	rb, err := DecodeRegisterBrokerBody([]byte(javaRegisterBody), false, 479)
	require.NoError(t, err)
	require.Equal(t, protocol.DataVersion{Counter: 3, Timestamp: 1700000000000}, rb.TopicConfigSerializeWrapper.DataVersion)
	require.Equal(t, protocol.TopicConfig{
		Attributes: map[string]string{}, Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4,
		TopicFilterType: "SINGLE_TAG", TopicName: "TopicTest",
	}, rb.TopicConfigSerializeWrapper.TopicConfigTable["TopicTest"])
	require.Equal(t, 7, rb.TopicConfigSerializeWrapper.TopicConfigTable["TBW102"].Perm)
	require.Equal(t, []string{}, rb.FilterServerList)

	// Our own encoding reads back the same.
	back, err := DecodeRegisterBrokerBody(EncodeRegisterBrokerBody(rb), false, 401)
	require.NoError(t, err)
	require.Equal(t, rb, back)

	// Before V3_0_11 the body is the wrapper alone.
	old, err := DecodeRegisterBrokerBody([]byte(`{"dataVersion":{"counter":1},"topicConfigTable":{"T":{"topicName":"T"}}}`), false, 36)
	require.NoError(t, err)
	require.Equal(t, 16, old.TopicConfigSerializeWrapper.TopicConfigTable["T"].ReadQueueNums, "Java's default")
	require.Nil(t, old.FilterServerList)
}

// compressedBody builds what RegisterBrokerBody.encode(true) writes.
func compressedBody(t *testing.T, topics []string, mappings []string) []byte {
	t.Helper()
	var raw []byte
	chunk := func(s string) {
		raw = binary.BigEndian.AppendUint32(raw, uint32(len(s)))
		raw = append(raw, s...)
	}
	chunk(`{"counter":9,"stateVersion":2,"timestamp":1700000000000}`)
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(topics)))
	for _, tc := range topics {
		chunk(tc)
	}
	chunk(`["10.0.0.9:1"]`)
	if mappings != nil {
		raw = binary.BigEndian.AppendUint32(raw, uint32(len(mappings)))
		for _, m := range mappings {
			chunk(m)
		}
	}
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	require.NoError(t, err)
	_, err = w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestDecodeRegisterBrokerBody_Compressed(t *testing.T) {
	topics := []string{`TopicTest 4 4 6 SINGLE_TAG {"k":"v"}`, `TBW102 8 8 7 SINGLE_TAG {"a":"has space"}`}
	want := map[string]protocol.TopicConfig{
		"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"k": "v"}},
		"TBW102":    {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG"},
	}
	for _, tc := range []struct {
		name     string
		version  int
		mappings []string
	}{
		{"4.9", 401, nil},
		{"5.x", 479, []string{`{"bname":"b","currIdMap":{0:0},"topic":"S"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb, err := DecodeRegisterBrokerBody(compressedBody(t, topics, tc.mappings), true, tc.version)
			require.NoError(t, err)
			require.Equal(t, protocol.DataVersion{Counter: 9, StateVersion: 2, Timestamp: 1700000000000}, rb.TopicConfigSerializeWrapper.DataVersion)
			require.Equal(t, want, rb.TopicConfigSerializeWrapper.TopicConfigTable)
			require.Equal(t, []string{"10.0.0.9:1"}, rb.FilterServerList)
		})
	}
}

func TestDecodeRegisterBrokerBody_Bad(t *testing.T) {
	for _, tc := range []struct {
		name       string
		body       []byte
		compressed bool
	}{
		{"not JSON", []byte(`{"filterServerList":`), false},
		{"wrong type", []byte(`{"topicConfigSerializeWrapper":[]}`), false},
		{"not zlib", []byte("plain"), true},
		{"truncated stream", compressedBody(t, []string{"T 1 1 6 SINGLE_TAG"}, nil)[:20], true},
		{"bad topic line", compressedBody(t, []string{"T x 1 6 SINGLE_TAG"}, nil), true},
		{"short topic line", compressedBody(t, []string{"T 1 1"}, nil), true},
		{"missing mapping count", compressedBody(t, nil, nil), true}, // read as a 5.x body
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRegisterBrokerBody(tc.body, tc.compressed, 479)
			require.ErrorIs(t, err, ErrBadBody)
		})
	}
	// A stream claiming more topics than it holds ends at its end.
	var raw []byte
	raw = binary.BigEndian.AppendUint32(raw, 2)
	raw = append(raw, "{}"...)
	raw = binary.BigEndian.AppendUint32(raw, 1<<30)
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(raw)
	w.Close()
	_, err := DecodeRegisterBrokerBody(buf.Bytes(), true, 401)
	require.ErrorIs(t, err, ErrBadBody)
}

func FuzzRegisterBrokerBody(f *testing.F) {
	f.Add([]byte(javaRegisterBody), false, 401)
	f.Add([]byte(`{"dataVersion":{},"topicConfigTable":{}}`), false, 36)
	var raw []byte
	raw = binary.BigEndian.AppendUint32(raw, 2)
	raw = append(raw, "{}"...)
	raw = binary.BigEndian.AppendUint32(raw, 1)
	raw = binary.BigEndian.AppendUint32(raw, 18)
	raw = append(raw, "T 1 1 6 SINGLE_TAG"...)
	raw = binary.BigEndian.AppendUint32(raw, 2)
	raw = append(raw, "[]"...)
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(raw)
	w.Close()
	f.Add(buf.Bytes(), true, 401)
	f.Add(EncodeRegisterBrokerBodyCompressed(bigRegistrationBody(3)), true, 479)
	f.Fuzz(func(t *testing.T, body []byte, compressed bool, version int) {
		rb, err := DecodeRegisterBrokerBody(body, compressed, version)
		if err != nil {
			return
		}
		back, err := DecodeRegisterBrokerBody(EncodeRegisterBrokerBody(rb), false, 401)
		if err != nil {
			t.Fatalf("our own encoding does not decode: %v", err)
		}
		if len(back.TopicConfigSerializeWrapper.TopicConfigTable) != len(rb.TopicConfigSerializeWrapper.TopicConfigTable) {
			t.Fatalf("topics lost in the round trip")
		}
		z, err := DecodeRegisterBrokerBody(EncodeRegisterBrokerBodyCompressed(rb), true, 479)
		if err != nil {
			t.Fatalf("our own compressed encoding does not decode: %v", err)
		}
		for name, tc := range rb.TopicConfigSerializeWrapper.TopicConfigTable {
			if strings.ContainsAny(name+tc.TopicFilterType, " ") || name == "" {
				return // the string form cannot carry it, in RocketMQ neither
			}
		}
		if len(z.TopicConfigSerializeWrapper.TopicConfigTable) != len(rb.TopicConfigSerializeWrapper.TopicConfigTable) {
			t.Fatalf("topics lost in the compressed round trip")
		}
	})
}
