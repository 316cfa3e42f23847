package clients_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
)

// goClientHeartbeat is the body rocketmq-client-go v2 sends (spec §5.2,
// checked against the client's own encoder).
const goClientHeartbeat = `{"clientID":"192.168.0.2@1234","producerDataSet":[{"groupName":"pg"}],` +
	`"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",` +
	`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[` +
	`{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],` +
	`"subVersion":1700000000000000000,"expressionType":"TAG"},` +
	`{"classFilterMode":false,"topic":"%RETRY%cg","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],` +
	`"unitMode":false}]}`

// javaClientHeartbeat is a body as a Java 5.x client writes it with
// fastjson: keys sorted, codeSet as numbers, subVersion in ms, V2 fields,
// and getters fastjson serializes that we do not know.
const javaClientHeartbeat = `{"clientID":"10.0.0.7@12345#8765#1700000000000","consumerDataSet":[` +
	`{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_ACTIVELY","groupName":"jg",` +
	`"messageModel":"BROADCASTING","subscriptionDataSet":[` +
	`{"classFilterMode":false,"codeSet":[97,857175],"expressionType":"TAG","subString":"a || 标签",` +
	`"subVersion":1700000000123,"tagsSet":["a","标签"],"topic":"JT"}],"unitMode":true}],` +
	`"heartbeatFingerprint":-42,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"},{"groupName":"jp"}],` +
	`"withoutSub":false,"someFutureField":{"x":[1,2]}}`

func TestDecodeHeartbeat_GoClient(t *testing.T) {
	hb, err := clients.DecodeHeartbeat([]byte(goClientHeartbeat))
	require.NoError(t, err)
	require.Equal(t, &clients.HeartbeatData{
		ClientID:        "192.168.0.2@1234",
		ProducerDataSet: []clients.ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []clients.ConsumerData{{
			GroupName:        "cg",
			ConsumeType:      clients.ConsumePassively,
			MessageModel:     clients.Clustering,
			ConsumeFromWhere: clients.ConsumeFromLastOffset,
			SubscriptionDataSet: []clients.SubscriptionData{
				{Topic: "T", SubString: "a || b", TagsSet: []string{"a", "b"}, CodeSet: []int64{97, 98},
					SubVersion: 1700000000000000000, ExpressionType: "TAG"},
				{Topic: "%RETRY%cg", SubString: "*", TagsSet: []string{}, CodeSet: []int64{},
					SubVersion: 1, ExpressionType: "TAG"},
			},
		}},
	}, hb)
}

func TestDecodeHeartbeat_JavaClient(t *testing.T) {
	hb, err := clients.DecodeHeartbeat([]byte(javaClientHeartbeat))
	require.NoError(t, err)
	require.Equal(t, &clients.HeartbeatData{
		ClientID:             "10.0.0.7@12345#8765#1700000000000",
		ProducerDataSet:      []clients.ProducerData{{GroupName: "CLIENT_INNER_PRODUCER"}, {GroupName: "jp"}},
		HeartbeatFingerprint: -42,
		ConsumerDataSet: []clients.ConsumerData{{
			GroupName:        "jg",
			ConsumeType:      clients.ConsumeActively,
			MessageModel:     clients.Broadcasting,
			ConsumeFromWhere: clients.ConsumeFromFirstOffset,
			UnitMode:         true,
			SubscriptionDataSet: []clients.SubscriptionData{
				{Topic: "JT", SubString: "a || 标签", TagsSet: []string{"a", "标签"}, CodeSet: []int64{97, 857175},
					SubVersion: 1700000000123, ExpressionType: "TAG"},
			},
		}},
	}, hb)
}

// TestDecodeHeartbeat_Lenient: what fastjson reads, we read.
func TestDecodeHeartbeat_Lenient(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want func(t *testing.T, hb *clients.HeartbeatData)
	}{
		{"nulls everywhere", `{"clientID":"c","producerDataSet":null,"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","tagsSet":null,"codeSet":null,"subVersion":null}]}],"heartbeatFingerprint":null}`,
			func(t *testing.T, hb *clients.HeartbeatData) {
				require.Equal(t, "T", hb.ConsumerDataSet[0].SubscriptionDataSet[0].Topic)
				require.Nil(t, hb.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet)
			}},
		{"numbers as strings", `{"clientID":"c","heartbeatFingerprint":"7","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subVersion":"123"}]}]}`,
			func(t *testing.T, hb *clients.HeartbeatData) {
				require.EqualValues(t, 7, hb.HeartbeatFingerprint)
				require.EqualValues(t, 123, hb.ConsumerDataSet[0].SubscriptionDataSet[0].SubVersion)
			}},
		{"long as float", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subVersion":1.7E12}]}]}`,
			func(t *testing.T, hb *clients.HeartbeatData) {
				require.EqualValues(t, 1700000000000, hb.ConsumerDataSet[0].SubscriptionDataSet[0].SubVersion)
			}},
		{"odd codes dropped", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","codeSet":["x",1,"2",null,{"a":1}]}]}]}`,
			func(t *testing.T, hb *clients.HeartbeatData) {
				require.Equal(t, []int64{1, 2}, hb.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet)
			}},
		{"key case", `{"ClientID":"c","ConsumerDataSet":[{"GroupName":"g"}]}`,
			func(t *testing.T, hb *clients.HeartbeatData) {
				require.Equal(t, "c", hb.ClientID)
				require.Equal(t, "g", hb.ConsumerDataSet[0].GroupName)
			}},
		{"V2 without subscriptions", `{"clientID":"c","heartbeatFingerprint":99,"withoutSub":true,"consumerDataSet":[{"groupName":"g"}]}`,
			func(t *testing.T, hb *clients.HeartbeatData) {
				require.True(t, hb.WithoutSub)
				require.EqualValues(t, 99, hb.HeartbeatFingerprint)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hb, err := clients.DecodeHeartbeat([]byte(tc.in))
			require.NoError(t, err)
			tc.want(t, hb)
		})
	}
}

func TestDecodeHeartbeat_Malformed(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ``},
		{"not json", `clientID=c`},
		{"truncated", goClientHeartbeat[:len(goClientHeartbeat)-3]},
		{"array", `[]`},
		{"consumers not a list", `{"clientID":"c","consumerDataSet":{}}`},
		{"subVersion text", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subVersion":"soon"}]}]}`},
		{"subVersion too large", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subVersion":1e300}]}]}`},
		{"fingerprint too large", `{"clientID":"c","heartbeatFingerprint":4294967296}`},
		// The Go client writes tags unescaped: a tag with a quote breaks
		// the JSON (the Java broker cannot read it either).
		{"go client unescaped quote", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","tagsSet":["a"b"]}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clients.DecodeHeartbeat([]byte(tc.in))
			require.ErrorIs(t, err, clients.ErrBadHeartbeat)
		})
	}
}

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(goClientHeartbeat))
	f.Add([]byte(javaClientHeartbeat))
	f.Add([]byte(`{"clientID":"c","consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["1",2],"subVersion":"3"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		hb, err := clients.DecodeHeartbeat(b) // must never panic
		if err != nil {
			return
		}
		enc, err := json.Marshal(hb)
		require.NoError(t, err)
		hb2, err := clients.DecodeHeartbeat(enc)
		require.NoError(t, err, "re-decoding %s", enc)
		require.Equal(t, hb, hb2, "decode/encode round trip differs")
	})
}
