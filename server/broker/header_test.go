package broker

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// rawSendRequest is a send request as the broker reads it off the wire:
// its ext fields raw.
func rawSendRequest(tb testing.TB, code int, ext map[string]string, st remoting.SerializeType) *remoting.Command {
	tb.Helper()
	req := remoting.NewRequest(code, ext, nil)
	req.SerializeType = st
	frame, err := req.AppendFrame(nil)
	require.NoError(tb, err)
	c, err := remoting.DecodeRawExt(frame)
	require.NoError(tb, err)
	return c
}

func TestSendHeader_V2ReadsByLongNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		ext  map[string]string
	}{
		{"v1", remoting.SendMessage, map[string]string{"producerGroup": "G", "topic": "T", "queueId": "3", "bornTimestamp": "42", "properties": "A\x01b\x02"}},
		{"v2", remoting.SendMessageV2, map[string]string{"a": "G", "b": "T", "e": "3", "g": "42", "i": "A\x01b\x02"}},
		{"v2 long names are not V2's", remoting.SendMessageV2, map[string]string{"a": "G", "b": "T", "e": "3", "g": "42", "i": "A\x01b\x02", "topic": "X", "queueId": "9"}},
	} {
		for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
			t.Run(tc.name+"/"+st.String(), func(t *testing.T) {
				c := rawSendRequest(t, tc.code, tc.ext, st)
				require.True(t, c.HasRawExt())
				h, props, err := decodeSendHeader(c, nil, nil)
				require.NoError(t, err)
				require.Equal(t, "T", h.topic)
				require.Equal(t, int32(3), h.queueID)
				require.Equal(t, int64(42), h.bornTimestamp)
				require.Equal(t, int32(16), h.maxReconsumeTimes)
				require.Equal(t, int32(4), h.defaultTopicQueueNums)
				require.Equal(t, "A\x01b\x02", string(props))
			})
		}
	}
}

func TestSendHeader_Errors(t *testing.T) {
	for _, tc := range []struct {
		ext  map[string]string
		want string
	}{
		{map[string]string{"b": "T", "e": "3"}, "header field producerGroup is missing"},
		{map[string]string{"a": "G", "e": "3"}, "header field topic is missing"},
		{map[string]string{"a": "G", "b": "T"}, "header field queueId is missing"},
		{map[string]string{"a": "G", "b": "T", "e": "x"}, `header field queueId="x" is not an integer`},
		{map[string]string{"a": "G", "b": "T", "e": "1", "f": "4294967296"}, "header field sysFlag=4294967296 is out of range"},
		{map[string]string{"a": "G", "b": "T", "e": "1", "g": "1.5"}, `header field bornTimestamp="1.5" is not an integer`},
	} {
		_, _, err := decodeSendHeader(rawSendRequest(t, remoting.SendMessageV2, tc.ext, remoting.SerializeJSON), nil, nil)
		require.EqualError(t, err, tc.want)
	}
}

// referenceSendHeader reads a send header with the map-based header
// methods the broker used before decodeSendHeader.
func referenceSendHeader(c *remoting.Command) (sendRequestHeader, []byte, error) {
	h := newHeader(c)
	if c.Code != remoting.SendMessage {
		h.short = sendV2Names
	}
	h.require("producerGroup", "topic", "queueId")
	r := sendRequestHeader{
		topic:                 h.str("topic"),
		queueID:               h.int32("queueId", 0),
		sysFlag:               h.int32("sysFlag", 0),
		bornTimestamp:         h.int64("bornTimestamp", 0),
		flag:                  h.int32("flag", 0),
		reconsumeTimes:        h.int32("reconsumeTimes", 0),
		maxReconsumeTimes:     h.int32("maxReconsumeTimes", 16),
		defaultTopicQueueNums: h.int32("defaultTopicQueueNums", 4),
		defaultTopic:          h.str("defaultTopic"),
	}
	return r, []byte(h.str("properties")), h.err
}

// FuzzDecodeSendHeader: decodeSendHeader over raw ext fields reads what
// the map-based header methods read of the same JSON ext object (Decode's
// map), errors included.
func FuzzDecodeSendHeader(f *testing.F) {
	f.Add(`{"a":"G","b":"T","c":"TBW102","d":"8","e":"3","f":"0","g":"1700000000000","h":"0","i":"K\u0001v\u0002","j":"1","l":"3"}`, true)
	f.Add(`{"producerGroup":"G","topic":"T","queueId":3,"queueId":null,"queueId":"\u0032","properties":"","sysFlag":""}`, false)
	f.Add(`{"a":"G","b":"T","e":"-1","e":"99999999999","g":true,"i":{"x":[1]}}`, true)
	f.Add(`{"a":"G","b":"T","e":"1","i":"K\u0001v\u0002","i":"","c":"X","c":"","b":""}`, true)
	f.Fuzz(func(t *testing.T, ext string, v2 bool) {
		code := remoting.SendMessage
		if v2 {
			code = remoting.SendMessageV2
		}
		hdr, err := json.Marshal(map[string]any{"code": code, "flag": 0})
		require.NoError(t, err)
		hdr = append(append(append(hdr[:len(hdr)-1], `,"extFields":`...), ext...), '}')
		frame := append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, hdr...)
		frame[0], frame[1], frame[2], frame[3] = byte((len(frame)-4)>>24), byte((len(frame)-4)>>16), byte((len(frame)-4)>>8), byte(len(frame)-4)
		frame[5], frame[6], frame[7] = byte(len(hdr)>>16), byte(len(hdr)>>8), byte(len(hdr))
		mc, merr := remoting.Decode(frame)
		rc, rerr := remoting.DecodeRawExt(frame)
		require.Equal(t, merr == nil, rerr == nil, "Decode %v, DecodeRawExt %v", merr, rerr)
		if merr != nil {
			return
		}
		want, wantProps, werr := referenceSendHeader(mc)
		got, gotProps, gerr := decodeSendHeader(rc, nil, nil)
		if werr != nil || gerr != nil {
			require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr))
			return
		}
		got.set, got.blank, got.ints, got.bad = [sendFieldCount]bool{}, [sendFieldCount]bool{}, [sendFieldCount]int64{}, [sendFieldCount][]byte{}
		require.Equal(t, want, got)
		require.Equal(t, string(wantProps), string(gotProps))
	})
}

// TestSendHeader_KnownTopicMakesNoString: a send to a topic the broker
// has is decoded without allocating (the name is the table's string).
func TestSendHeader_KnownTopicMakesNoString(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	topics, err := meta.OpenTopics(filepath.Join(t.TempDir(), "topics.json"), meta.TopicsOptions{})
	require.NoError(t, err)
	require.NoError(t, topics.Update(protocol.TopicConfig{TopicName: "KnownTopic", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}))
	c := rawSendRequest(t, remoting.SendMessageV2, map[string]string{"a": "G", "b": "KnownTopic", "e": "3", "i": "A\x01b\x02"}, remoting.SerializeJSON)
	props := make([]byte, 0, 512)
	var h sendRequestHeader
	allocs := testing.AllocsPerRun(100, func() {
		h, _, err = decodeSendHeader(c, props, topics)
	})
	require.NoError(t, err)
	require.Equal(t, "KnownTopic", h.topic)
	require.Zero(t, allocs)
}
