package remoting_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// TestOfficialGoClient_TalksToServer has the official Go client's admin
// send GET_ALL_TOPIC_LIST_FROM_NAMESERVER to our server: our decoder reads
// the client's JSON frame, and the client's decoder reads our answer, in
// both header encodings, with control characters and non-ASCII text in
// the header.
func TestOfficialGoClient_TalksToServer(t *testing.T) {
	rlog.SetLogLevel("fatal")
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			s, err := remoting.NewServer(remoting.Options{})
			require.NoError(t, err)
			seen := make(chan *remoting.Command, 1)
			s.RegisterFunc(remoting.GetAllTopicListFromNameServer, func(_ context.Context, req *remoting.Request) *remoting.Command {
				seen <- req.Command
				resp := remoting.NewResponse(remoting.Success, "ok \x01 标签 \"quoted\"")
				resp.ExtFields = map[string]string{"props": "a\x01b\x02", "n": "1"}
				resp.Body = []byte(`{"topicList":["TopicA","%RETRY%g"],"brokerAddr":"127.0.0.1:10911"}`)
				resp.SerializeType = st
				return resp
			})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			go s.Serve(l)
			defer s.Close()

			a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{l.Addr().String()})))
			require.NoError(t, err)
			defer a.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			list, err := a.FetchAllTopicList(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"TopicA", "%RETRY%g"}, list.TopicList)
			require.Equal(t, "127.0.0.1:10911", list.BrokerAddr)

			var req *remoting.Command
			select {
			case req = <-seen:
			case <-time.After(10 * time.Second):
				t.Fatal("no request seen")
			}
			require.Equal(t, "GO", req.Language)
			require.Equal(t, 317, req.Version)
			require.Equal(t, remoting.SerializeJSON, req.SerializeType)
			require.False(t, req.IsOneway())
		})
	}
}
