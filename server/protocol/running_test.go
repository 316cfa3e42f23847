package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeConsumerRunningInfo(t *testing.T) {
	// As the Go client's ConsumerRunningInfo.Encode writes it.
	goForm := `{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","PROP_CLIENT_VERSION":"v2.1.2"},"statusTable":{},"subscriptionSet":[],` +
		`"mqTable":{{"topic":"T","brokerName":"broker-a","queueId":1}:{"commitOffset":3,"cachedMsgCount":0},` +
		`{"topic":"T","brokerName":"broker-a","queueId":0}:{"commitOffset":2}}, "jstack":"" }`
	info, err := DecodeConsumerRunningInfo([]byte(goForm))
	require.NoError(t, err)
	require.Equal(t, "CONSUME_PASSIVELY", info.Properties["PROP_CONSUME_TYPE"])
	require.Len(t, info.MQTable, 2)
	require.JSONEq(t, `{"commitOffset":2}`, string(info.MQTable[MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}]))

	info, err = DecodeConsumerRunningInfo([]byte(`{"jstack":""}`))
	require.NoError(t, err)
	require.Empty(t, info.MQTable)
	_, err = DecodeConsumerRunningInfo([]byte(`{"mqTable":{{"topic":1}:{}}}`))
	require.ErrorIs(t, err, ErrBadBody)
}

func FuzzDecodeConsumerRunningInfo(f *testing.F) {
	f.Add([]byte(`{"properties":{"a":"b"},"mqTable":{{"topic":"T","brokerName":"b","queueId":1}:{"commitOffset":3}}}`))
	f.Add([]byte(`{"mqTable":{"{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":1}":{}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeConsumerRunningInfo(b) // must not panic
	})
}
