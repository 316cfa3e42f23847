package namesrv

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// TestEncodeRegisterBrokerBodyCompressed_RoundTrip: the compressed body of
// 25,000 topics decodes to the same table (less topicSysFlag and order,
// which the form does not carry, as in RocketMQ) and is far smaller than
// the JSON body.
func TestEncodeRegisterBrokerBodyCompressed_RoundTrip(t *testing.T) {
	rb := &protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
			DataVersion:      protocol.DataVersion{Counter: 7, StateVersion: 1, Timestamp: 1700000000000},
			TopicConfigTable: map[string]protocol.TopicConfig{},
		},
		FilterServerList: []string{"10.0.0.1:1"},
	}
	for i := range 25000 {
		name := fmt.Sprintf("Topic%05d", i)
		rb.TopicConfigSerializeWrapper.TopicConfigTable[name] = protocol.TopicConfig{TopicName: name,
			ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
	}
	rb.TopicConfigSerializeWrapper.TopicConfigTable["A"] = protocol.TopicConfig{TopicName: "A", ReadQueueNums: 1,
		WriteQueueNums: 2, Perm: 4, TopicFilterType: "MULTI_TAG", Attributes: map[string]string{"+message.type": "FIFO"}}
	z := EncodeRegisterBrokerBodyCompressed(rb)
	plain := EncodeRegisterBrokerBody(rb)
	t.Logf("25,001 topics: JSON body %d bytes, compressed %d bytes (%.1fx)", len(plain), len(z), float64(len(plain))/float64(len(z)))
	require.Less(t, len(z)*5, len(plain))
	for _, version := range []int{401, 479} {
		got, err := DecodeRegisterBrokerBody(z, true, version)
		require.NoError(t, err)
		require.Equal(t, rb.TopicConfigSerializeWrapper, got.TopicConfigSerializeWrapper)
		require.Equal(t, rb.FilterServerList, got.FilterServerList)
	}
}

// TestRegisterRequest_Compressed: the request says compressed=true and
// carries the CRC of the bytes it sends.
func TestRegisterRequest_Compressed(t *testing.T) {
	r := &BrokerRegistration{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911", Compressed: true,
		Topics: protocol.TopicConfigSerializeWrapper{TopicConfigTable: map[string]protocol.TopicConfig{
			"T": {TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, Attributes: map[string]string{}}}}}
	req := RegisterRequest(r)
	require.Equal(t, "true", req.Ext("compressed"))
	got, err := DecodeRegisterBrokerBody(req.Body, true, 479)
	require.NoError(t, err)
	require.Equal(t, "SINGLE_TAG", got.TopicConfigSerializeWrapper.TopicConfigTable["T"].TopicFilterType)
}
