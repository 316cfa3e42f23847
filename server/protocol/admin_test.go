package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResetOffsetBody_FastjsonForm_RoundTrips(t *testing.T) {
	r := &ResetOffsetBody{OffsetTable: map[MessageQueue]int64{
		{Topic: "T", BrokerName: "b", QueueID: 1}: 7,
		{Topic: "T", BrokerName: "b", QueueID: 0}: 5,
	}}
	got := string(r.AppendJSON(nil))
	require.Equal(t, `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:7}}`, got)
	back, err := DecodeResetOffsetBody([]byte(got))
	require.NoError(t, err)
	require.Equal(t, r, back)
}

func TestConsumeStats_RoundTripAndLag(t *testing.T) {
	c := &ConsumeStats{ConsumeTps: 2.5, OffsetTable: map[MessageQueue]OffsetWrapper{
		{Topic: "T", BrokerName: "b", QueueID: 0}: {BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 4, LastTimestamp: 9},
		{Topic: "T", BrokerName: "b", QueueID: 1}: {BrokerOffset: 3, ConsumerOffset: 3, PullOffset: 3},
	}}
	got := string(c.AppendJSON(nil))
	require.Equal(t, `{"consumeTps":2.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:`+
		`{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":9,"pullOffset":4},{"brokerName":"b","queueId":1,"topic":"T"}:`+
		`{"brokerOffset":3,"consumerOffset":3,"lastTimestamp":0,"pullOffset":3}}}`, got)
	back, err := DecodeConsumeStats([]byte(got))
	require.NoError(t, err)
	require.Equal(t, c, back)
	require.EqualValues(t, 6, back.Lag())
	empty, err := DecodeConsumeStats([]byte(`{"consumeTps":0.0,"offsetTable":{}}`))
	require.NoError(t, err)
	require.Empty(t, empty.OffsetTable)
}

func TestTopicStatsTable_RoundTrip(t *testing.T) {
	ts := &TopicStatsTable{OffsetTable: map[MessageQueue]TopicOffset{
		{Topic: "a,{b}:c", BrokerName: "x", QueueID: 3}: {MinOffset: 1, MaxOffset: 2, LastUpdateTimestamp: 3},
	}}
	got := ts.AppendJSON(nil)
	require.Contains(t, string(got), `"topicPutTps":0.0`)
	back, err := DecodeTopicStatsTable(got)
	require.NoError(t, err)
	require.Equal(t, ts, back)
}

func TestGetConsumerStatusBody_ReadsTheGoClientsAnswer(t *testing.T) {
	// As ConsumerStatus.Encode in the Go client writes it.
	g, err := DecodeGetConsumerStatusBody([]byte(`{"messageQueueTable":{{"topic":"T","brokerName":"b","queueId":2}:11}}`))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]int64{{Topic: "T", BrokerName: "b", QueueID: 2}: 11}, g.MessageQueueTable)

	out := &GetConsumerStatusBody{ConsumerTable: map[string]map[MessageQueue]int64{"c1": g.MessageQueueTable}, MessageQueueTable: map[MessageQueue]int64{}}
	back, err := DecodeGetConsumerStatusBody(out.AppendJSON(nil))
	require.NoError(t, err)
	require.Equal(t, out, back)
}

func TestDecode_BadBodies(t *testing.T) {
	for _, in := range []string{``, `[]`, `{`, `{"offsetTable":{{"topic":"T"}:}}`, `{"offsetTable":{{"topic":"T"}:1`,
		`{"offsetTable":{"x":1}}`, `{"offsetTable":{{"queueId":"z"}:1}}`, `{"offsetTable":{}} x`, `{"a" 1}`} {
		_, err := DecodeResetOffsetBody([]byte(in))
		require.ErrorIs(t, err, ErrBadBody, in)
	}
}

func TestConnectionBodies(t *testing.T) {
	cc := &ConsumerConnection{
		ConnectionSet:     []Connection{{ClientID: "c@1", ClientAddr: "127.0.0.1:5", Language: "GO", Version: 317}},
		SubscriptionTable: map[string]SubscriptionData{"T": {Topic: "T", SubString: "a || b", ExpressionType: "TAG", TagsSet: []string{"a", "b"}, CodeSet: []int64{97, 98}, SubVersion: 1}},
		ConsumeType:       "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
	}
	require.Equal(t, `{"connectionSet":[{"clientAddr":"127.0.0.1:5","clientId":"c@1","language":"GO","version":317}],`+
		`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",`+
		`"subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[97,98],"expressionType":"TAG","subString":"a || b",`+
		`"subVersion":1,"tagsSet":["a","b"],"topic":"T"}}}`, string(cc.AppendJSON(nil)))
	require.Equal(t, `{"connectionSet":[]}`, string((&ProducerConnection{}).AppendJSON(nil)))
	require.Equal(t, `{"groupList":["a","b"]}`, string((&GroupList{GroupList: []string{"a", "b"}}).AppendJSON(nil)))
	require.Equal(t, `{"table":{"a":"1","b":"x\"y"}}`, string((&KVTable{Table: map[string]string{"b": `x"y`, "a": "1"}}).AppendJSON(nil)))
}

func TestDecodeCreateTopicListRequestBody_Defaults(t *testing.T) {
	b, err := DecodeCreateTopicListRequestBody([]byte(`{"topicConfigList":[{"topicName":"A"},{"topicName":"B","readQueueNums":2,"writeQueueNums":2,"perm":6}]}`))
	require.NoError(t, err)
	require.Len(t, b.TopicConfigList, 2)
	require.Equal(t, 16, b.TopicConfigList[0].ReadQueueNums)
	require.Equal(t, 2, b.TopicConfigList[1].WriteQueueNums)
	_, err = DecodeCreateTopicListRequestBody([]byte(`{"topicConfigList":[{"topicName":1}]}`))
	require.ErrorIs(t, err, ErrBadBody)
}

// FuzzDecodeAdminBodies: the decoders of bodies with queue-object keys
// never panic, and what they accept re-encodes to what decodes the same.
func FuzzDecodeAdminBodies(f *testing.F) {
	for _, s := range []string{
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`,
		`{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":1,"consumerOffset":0}}}`,
		`{"messageQueueTable":{{"topic":"T","brokerName":"b","queueId":2}:11},"consumerTable":{"c":{}}}`,
		`{"offsetTable":{"{\"topic\":\"T\",\"queueId\":1}":3}}`,
		`{"topicPutTps":0.0,"offsetTable":{{"topic":"T"}:{"minOffset":1}}}`,
		`{"a":[1,{"b":[2]}],"offsetTable":null}`,
		`{{{{{{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeResetOffsetBody(b); err == nil {
			back, err := DecodeResetOffsetBody(r.AppendJSON(nil))
			require.NoError(t, err)
			require.Equal(t, r, back)
		}
		if c, err := DecodeConsumeStats(b); err == nil {
			if _, err := DecodeConsumeStats(c.AppendJSON(nil)); err != nil && !isNonFinite(c.ConsumeTps) {
				t.Fatalf("re-encoded ConsumeStats does not decode: %v", err)
			}
		}
		if ts, err := DecodeTopicStatsTable(b); err == nil {
			if _, err := DecodeTopicStatsTable(ts.AppendJSON(nil)); err != nil && !isNonFinite(ts.TopicPutTps) {
				t.Fatalf("re-encoded TopicStatsTable does not decode: %v", err)
			}
		}
		if g, err := DecodeGetConsumerStatusBody(b); err == nil {
			_, err := DecodeGetConsumerStatusBody(g.AppendJSON(nil))
			require.NoError(t, err)
		}
		_, _ = DecodeCreateTopicListRequestBody(b)
	})
}

func isNonFinite(f float64) bool { return f-f != 0 }
