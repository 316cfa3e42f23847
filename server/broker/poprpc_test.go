package broker_test

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// popped decodes a POP_MESSAGE answer's records.
func popped(t *testing.T, resp *remoting.Command) []*message.Message {
	t.Helper()
	var ms []*message.Message
	for b := resp.Body; len(b) > 0; {
		m, n, err := message.Decode(b)
		require.NoError(t, err)
		ms = append(ms, m)
		b = b[n:]
	}
	return ms
}

func popReq(group, topic string, max, pollMs int) *remoting.Command {
	return remoting.NewRequest(remoting.PopMessage, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "-1",
		"maxMsgNums": strconv.Itoa(max), "invisibleTime": "60000", "pollTime": strconv.Itoa(pollMs),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10), "initMode": "0", "expType": "TAG", "exp": "*"}, nil)
}

// TestPopRemoting_PopAckChangeBatchAckNotification drives the remoting POP
// codes as Apache's clients send them.
func TestPopRemoting_PopAckChangeBatchAckNotification(t *testing.T) {
	tb := startBroker(t, store.Options{})
	resp := tb.invoke(remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "PopT", "readQueueNums": "4", "writeQueueNums": "4"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	for i := range 8 {
		_, err := tb.b.Store().PutMessage(&message.Message{Topic: "PopT", QueueID: int32(i % 4), Body: []byte(fmt.Sprint(i)),
			Properties: message.EncodeProperties(map[string]string{message.PropertyUniqClientMessageIDKeyIndex: fmt.Sprint("U", i)})})
		require.NoError(t, err)
	}
	resp = tb.invoke(popReq("PopG", "PopT", 32, 0))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ms := popped(t, resp)
	require.Len(t, ms, 8, "a pop takes from all queues")
	require.NotEmpty(t, resp.ExtFields["startOffsetInfo"])
	require.NotEmpty(t, resp.ExtFields["msgOffsetInfo"])
	ck := func(m *message.Message) string {
		v, ok := message.LookupProperty(m.Properties, message.PropertyPopCK)
		require.True(t, ok)
		return v
	}
	ackExt := func(m *message.Message) map[string]string {
		return map[string]string{"consumerGroup": "PopG", "topic": "PopT", "queueId": strconv.Itoa(int(m.QueueID)),
			"extraInfo": ck(m), "offset": strconv.FormatInt(m.QueueOffset, 10)}
	}
	// ACK_MESSAGE the first; CHANGE_MESSAGE_INVISIBLETIME the second to 0.
	resp = tb.invoke(remoting.NewRequest(remoting.AckMessage, ackExt(ms[0]), nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ext := ackExt(ms[1])
	ext["invisibleTime"] = "0"
	resp = tb.invoke(remoting.NewRequest(remoting.ChangeMessageInvisibleTime, ext, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	// The old handle of the second is stale now.
	resp = tb.invoke(remoting.NewRequest(remoting.AckMessage, ackExt(ms[1]), nil))
	require.Equal(t, remoting.NoMessage, resp.Code, resp.Remark)
	bad := ackExt(ms[2])
	bad["extraInfo"] = "forged"
	resp = tb.invoke(remoting.NewRequest(remoting.AckMessage, bad, nil))
	require.Equal(t, remoting.InvalidParameter, resp.Code, resp.Remark)

	// BATCH_ACK_MESSAGE the other six: a bit per offset from the start offset.
	body := `{"acks":[`
	for i, m := range ms[2:] {
		var fields []int64
		for _, f := range []int{0, 1, 2} {
			var v int64
			fmt.Sscan(strings.Fields(ck(m))[f], &v)
			fields = append(fields, v)
		}
		bit := m.QueueOffset - fields[0]
		bits := make([]byte, bit/8+1)
		bits[bit/8] |= 1 << (bit % 8)
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`{"c":"PopG","t":"PopT","r":"0","so":%d,"q":%d,"rq":0,"pt":%d,"it":%d,"b":%q}`,
			fields[0], m.QueueID, fields[1], fields[2], base64.StdEncoding.EncodeToString(bits))
	}
	body += `]}`
	resp = tb.invoke(remoting.NewRequest(remoting.BatchAckMessage, nil, []byte(body)))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	// Only the second comes back (made visible), with its next attempt.
	resp = tb.invoke(popReq("PopG", "PopT", 32, 0))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	again := popped(t, resp)
	require.Len(t, again, 1)
	require.Equal(t, ms[1].QueueOffset, again[0].QueueOffset)
	require.Equal(t, int32(1), again[0].ReconsumeTimes)
	resp = tb.invoke(remoting.NewRequest(remoting.AckMessage, ackExt(again[0]), nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = tb.invoke(popReq("PopG", "PopT", 32, 0))
	require.Equal(t, remoting.PullNotFound, resp.Code)

	// NOTIFICATION and a held POP are woken by an arrival.
	notify := remoting.NewRequest(remoting.Notification, map[string]string{"consumerGroup": "PopG", "topic": "PopT", "queueId": "-1", "pollTime": "0"}, nil)
	resp = tb.invoke(notify)
	require.Equal(t, "false", resp.ExtFields["hasMsg"])
	put := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond) // the pop below is held first
		_, err := tb.b.Store().PutMessage(&message.Message{Topic: "PopT", QueueID: 2, Body: []byte("late")})
		put <- err
	}()
	defer func() { require.NoError(t, <-put) }()
	start := time.Now()
	resp = tb.invoke(popReq("PopG", "PopT", 32, 4000))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Less(t, time.Since(start), 3*time.Second, "the held pop was not woken by the arrival")
	require.Equal(t, "late", string(popped(t, resp)[0].Body))

	resp = tb.invoke(popReq("PopG", "NoSuchTopic", 1, 0))
	require.Equal(t, remoting.TopicNotExist, resp.Code)
	resp = tb.invoke(popReq("PopG", "PopT", 33, 0))
	require.Equal(t, remoting.SystemError, resp.Code)
}
