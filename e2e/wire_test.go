package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

func invoke(t *testing.T, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

// TestE2E_QueryByKeyAndViewByID: the Go client has no query API, so the
// requests go over our remoting client and the answers are decoded with
// the official client's decoder.
func TestE2E_QueryByKeyAndViewByID(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("QueryTopic")
	res := sendN(t, p, topic, "q", 5, nil)
	require.Eventually(t, func() bool {
		r, err := s.b.Store().QueryMessage(topic, "q-key-3", 4, 0, 1<<62)
		if err != nil {
			return false
		}
		defer r.Release()
		return len(r.Messages) == 1
	}, 5*time.Second, 10*time.Millisecond)

	resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.QueryMessage, map[string]string{
		"topic": topic, "key": "q-key-3", "maxNum": "32", "beginTimestamp": "0",
		"endTimestamp": strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10),
	}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	msgs := primitive.DecodeMessage(resp.Body)
	require.Len(t, msgs, 1)
	require.Equal(t, "q-3", string(msgs[0].Body))
	require.Equal(t, res[3].MsgID, msgs[0].GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex))

	resp = invoke(t, s.b.Addr(), remoting.NewRequest(remoting.QueryMessage, map[string]string{
		"topic": topic, "key": "no-such-key", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "9999999999999",
	}, nil))
	require.Equal(t, remoting.QueryNotFound, resp.Code)

	// View by the offset message id the send returned.
	_, off, err := message.ParseOffsetMsgID(res[2].OffsetMsgID)
	require.NoError(t, err)
	resp = invoke(t, s.b.Addr(), remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	msgs = primitive.DecodeMessage(resp.Body)
	require.Len(t, msgs, 1)
	require.Equal(t, "q-2", string(msgs[0].Body))
	require.Equal(t, res[2].OffsetMsgID, msgs[0].OffsetMsgId)
}

// TestE2E_BadInput: garbage never stops the broker from serving.
func TestE2E_BadInput(t *testing.T) {
	s := startSystem(t, store.Options{})
	addr := s.b.Addr()
	rng := rand.New(rand.NewPCG(1, 2))
	raw := func(b []byte) {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, time.Second)
		require.NoError(t, err)
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Write(b)
		c.(*net.TCPConn).CloseWrite()
		var buf [64]byte
		c.Read(buf[:]) // the broker closes the connection or answers
	}
	for range 20 { // random bytes
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		raw(b)
	}
	good, err := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "T", "queueId": "0"}, nil).AppendFrame(nil)
	require.NoError(t, err)
	for cut := 1; cut < len(good); cut += 7 { // truncated frames
		raw(good[:cut])
	}
	huge := binary.BigEndian.AppendUint32(nil, 100<<20) // a 100 MiB length field
	raw(append(huge, bytes.Repeat([]byte{0}, 64)...))

	resp := invoke(t, addr, remoting.NewRequest(9999, nil, nil))
	require.Equal(t, remoting.RequestCodeNotSupported, resp.Code)
	require.Contains(t, resp.Remark, "9999")

	sendWith := func(topic, props string, body []byte) *remoting.Command {
		return invoke(t, addr, remoting.NewRequest(remoting.SendMessage, map[string]string{
			"producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0", "properties": props,
			"reconsumeTimes": "0", "unitMode": "false", "batch": "false",
		}, body))
	}
	send := func(topic string, body []byte) *remoting.Command { return sendWith(topic, "", body) }
	big := make([]byte, 5<<20)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	resp = send("BadInputTopic", big)
	require.Equal(t, remoting.MessageIllegal, resp.Code)
	require.Contains(t, resp.Remark, "exceeds")
	resp = sendWith("BadInputTopic", "KEYS\x01a\x00b\x02", []byte("x")) // a NUL: what a torn record shows
	require.Equal(t, remoting.MessageIllegal, resp.Code)
	require.Contains(t, resp.Remark, "NUL")
	for _, topic := range []string{"bad topic", "bad/topic", "", string(bytes.Repeat([]byte("x"), 300))} {
		resp = send(topic, []byte("x"))
		require.NotEqual(t, remoting.Success, resp.Code, "topic %q", topic)
		require.NotEmpty(t, resp.Remark)
	}
	// Still serving.
	resp = send("BadInputTopic", []byte("fine"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}
