package proxy

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/protocol"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

type fixture struct {
	t   *testing.T
	b   *broker.Broker
	srv *Server
	c   v2.MessagingServiceClient
	ctx context.Context
}

func start(t *testing.T, with ...func(*broker.Options)) *fixture {
	t.Helper()
	o := broker.Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: t.TempDir(),
		Store: store.Options{CommitLogFileSize: 16 << 20}}
	for _, w := range with {
		w(&o)
	}
	b, err := broker.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(b, Options{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		b.Shutdown(ctx)
	})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "test@1@0@x", "x-mq-language", "GOLANG",
		"x-mq-client-version", "5.0.0", "x-mq-protocol", "v2")
	return &fixture{t: t, b: b, srv: srv, c: v2.NewMessagingServiceClient(conn), ctx: ctx}
}

// topic makes a topic over remoting, as mqadmin updateTopic -a does.
func (f *fixture) topic(name, attrs string) {
	f.t.Helper()
	c, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close()
	ext := map[string]string{"topic": name, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}
	if attrs != "" {
		ext["attributes"] = attrs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, f.b.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil))
	if err != nil || resp.Code != remoting.Success {
		f.t.Fatalf("create topic %s: %v %+v", name, err, resp)
	}
}

func msg(topic, id string, body string) *v2.Message {
	tag := "TagA"
	return &v2.Message{Topic: &v2.Resource{Name: topic}, Body: []byte(body), UserProperties: map[string]string{"color": "red"},
		SystemProperties: &v2.SystemProperties{MessageId: id, Tag: &tag, Keys: []string{"k1", "k2"},
			MessageType: v2.MessageType_NORMAL, BornTimestamp: timestamppb.Now(), BodyEncoding: v2.Encoding_IDENTITY}}
}

func (f *fixture) send(m *v2.Message) *v2.SendMessageResponse {
	f.t.Helper()
	r, err := f.c.SendMessage(f.ctx, &v2.SendMessageRequest{Messages: []*v2.Message{m}})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// receive runs one ReceiveMessage and returns its status and messages.
func (f *fixture) receive(req *v2.ReceiveMessageRequest, timeout time.Duration) (*v2.Status, []*v2.Message) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, timeout)
	defer cancel()
	st, err := f.c.ReceiveMessage(ctx, req)
	if err != nil {
		f.t.Fatal(err)
	}
	var status *v2.Status
	var msgs []*v2.Message
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return status, msgs
		}
		if err != nil {
			f.t.Fatal(err)
		}
		switch c := r.Content.(type) {
		case *v2.ReceiveMessageResponse_Status:
			if status != nil {
				f.t.Fatal("two statuses")
			}
			status = c.Status
		case *v2.ReceiveMessageResponse_Message:
			if status == nil {
				f.t.Fatal("a message before the status")
			}
			msgs = append(msgs, c.Message)
		}
	}
}

func recvReq(topic, group string, batch int32, invisible time.Duration) *v2.ReceiveMessageRequest {
	return &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: group},
		MessageQueue:       &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: 0, Broker: &v2.Broker{Name: "broker-a"}},
		FilterExpression:   &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
		BatchSize:          batch,
		InvisibleDuration:  durationpb.New(invisible),
		LongPollingTimeout: durationpb.New(5 * time.Second)}
}

func TestQueryRouteAndTelemetrySettings(t *testing.T) {
	f := start(t)
	f.topic("TopicN", "")
	f.topic("TopicF", "+message.type=FIFO")
	r, err := f.c.QueryRoute(f.ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "TopicF"},
		Endpoints: &v2.Endpoints{Scheme: v2.AddressScheme_IPv4, Addresses: []*v2.Address{{Host: "127.0.0.1", Port: 8081}}}})
	if err != nil || r.Status.Code != v2.Code_OK || len(r.MessageQueues) != 4 {
		t.Fatalf("%v %v", err, r)
	}
	for i, q := range r.MessageQueues {
		if q.Id != int32(i) || q.Permission != v2.Permission_READ_WRITE || len(q.AcceptMessageTypes) != 1 ||
			q.AcceptMessageTypes[0] != v2.MessageType_FIFO || q.Broker.Endpoints.Addresses[0].Port != 8081 {
			t.Fatalf("queue %d: %v", i, q)
		}
	}
	r, _ = f.c.QueryRoute(f.ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Nope"}})
	if r.Status.Code != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("unknown topic: %v", r.Status)
	}
	r, _ = f.c.QueryRoute(f.ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "bad topic!"}})
	if r.Status.Code != v2.Code_ILLEGAL_TOPIC {
		t.Fatalf("illegal topic: %v", r.Status)
	}

	// A FIFO group (consumeMessageOrderly) gets subscription.fifo=true at once.
	g, _ := f.b.Groups().FindOrCreate("GroupF")
	g.ConsumeMessageOrderly = true
	if err := f.b.Groups().Update(g); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	tel, err := f.c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ct := v2.ClientType_SIMPLE_CONSUMER
	if err := tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &ct,
		RequestTimeout: durationpb.New(3 * time.Second),
		PubSub:         &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: "GroupF"}}}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := tel.Recv()
	if err != nil || got.Status.GetCode() != v2.Code_OK || !got.GetSettings().GetSubscription().GetFifo() ||
		got.GetSettings().GetBackoffPolicy().GetMaxAttempts() != 17 {
		t.Fatalf("consumer settings: %v %v", err, got)
	}
	pt := v2.ClientType_PRODUCER
	tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &pt,
		PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: "TopicN"}}}}}}})
	got, err = tel.Recv()
	if err != nil || !got.GetSettings().GetPublishing().GetValidateMessageType() || got.GetSettings().GetPublishing().GetMaxBodySize() != 4<<20 {
		t.Fatalf("producer settings: %v %v", err, got)
	}
	tel.CloseSend()
	hb, err := f.c.Heartbeat(f.ctx, &v2.HeartbeatRequest{Group: &v2.Resource{Name: "GroupF"}, ClientType: v2.ClientType_SIMPLE_CONSUMER})
	if err != nil || hb.Status.Code != v2.Code_OK {
		t.Fatalf("heartbeat %v %v", err, hb)
	}
	as, err := f.c.QueryAssignment(f.ctx, &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: "TopicF"}, Group: &v2.Resource{Name: "GroupF"}})
	if err != nil || as.Status.Code != v2.Code_OK || len(as.Assignments) != 4 {
		t.Fatalf("FIFO assignment %v %v", err, as)
	}
	as, _ = f.c.QueryAssignment(f.ctx, &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: "TopicN"}, Group: &v2.Resource{Name: "GroupN"}})
	if len(as.Assignments) != 1 || as.Assignments[0].MessageQueue.Id != -1 {
		t.Fatalf("normal assignment %v", as)
	}
	nt, err := f.c.NotifyClientTermination(f.ctx, &v2.NotifyClientTerminationRequest{})
	if err != nil || nt.Status.Code != v2.Code_OK {
		t.Fatalf("%v %v", err, nt)
	}
}

func TestSendReceiveAck_AllQueuesAndWhatMessagesCarry(t *testing.T) {
	f := start(t)
	f.topic("TopicN", "")
	for i := range 10 {
		r := f.send(msg("TopicN", fmt.Sprintf("ID%02d", i), fmt.Sprintf("body-%d", i)))
		if r.Status.Code != v2.Code_OK || r.Entries[0].MessageId != fmt.Sprintf("ID%02d", i) {
			t.Fatalf("send: %v", r)
		}
	}
	st, msgs := f.receive(recvReq("TopicN", "G1", 32, 30*time.Second), 15*time.Second)
	if st.Code != v2.Code_OK || len(msgs) != 10 {
		t.Fatalf("receive: %v, %d messages (want all 10, from every queue)", st, len(msgs))
	}
	queues := map[int32]bool{}
	var acks []*v2.AckMessageEntry
	for _, m := range msgs {
		sp := m.SystemProperties
		sum := md5.Sum(m.Body)
		if sp.BodyDigest.Checksum != strings.ToUpper(fmt.Sprintf("%x", sum)) || sp.BodyDigest.Type != v2.DigestType_MD5 {
			t.Fatalf("digest %v", sp.BodyDigest)
		}
		if sp.GetTag() != "TagA" || strings.Join(sp.Keys, ",") != "k1,k2" || m.UserProperties["color"] != "red" ||
			len(m.UserProperties) != 1 || sp.GetDeliveryAttempt() != 1 || !strings.HasPrefix(sp.MessageId, "ID") ||
			sp.BornTimestamp == nil || sp.GetReceiptHandle() == "" || sp.MessageType != v2.MessageType_NORMAL {
			t.Fatalf("message %v", m)
		}
		queues[sp.QueueId] = true
		acks = append(acks, &v2.AckMessageEntry{MessageId: sp.MessageId, ReceiptHandle: sp.GetReceiptHandle()})
	}
	if len(queues) != 4 {
		t.Fatalf("queues %v", queues)
	}
	ar, err := f.c.AckMessage(f.ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: "G1"}, Topic: &v2.Resource{Name: "TopicN"}, Entries: acks})
	if err != nil || ar.Status.Code != v2.Code_OK || len(ar.Entries) != 10 {
		t.Fatalf("ack: %v %v", err, ar)
	}

	// Nothing acked comes back; a receive waiting is woken by an arrival.
	sent, sendErr := make(chan time.Time, 1), make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // let the receive start waiting first
		sent <- time.Now()
		_, err := f.c.SendMessage(f.ctx, &v2.SendMessageRequest{Messages: []*v2.Message{msg("TopicN", "LATE", "late")}})
		sendErr <- err
	}()
	st, msgs = f.receive(recvReq("TopicN", "G1", 32, 30*time.Second), 15*time.Second)
	woke := time.Since(<-sent)
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if st.Code != v2.Code_OK || len(msgs) != 1 || msgs[0].SystemProperties.MessageId != "LATE" {
		t.Fatalf("after the ack: %v %v", st, msgs)
	}
	if woke > 3*time.Second {
		t.Fatalf("the receive woke %v after the arrival (long polling is 5 s)", woke)
	}
	t.Logf("receive woke %v after the send began", woke)
}

func TestReceiptHandles_StaleForgedExpiredAndChange(t *testing.T) {
	f := start(t)
	f.topic("TopicN", "")
	f.send(msg("TopicN", "ID1", "x"))
	_, msgs := f.receive(recvReq("TopicN", "G1", 1, 30*time.Second), 15*time.Second)
	if len(msgs) != 1 {
		t.Fatal("no message")
	}
	h := msgs[0].SystemProperties.GetReceiptHandle()
	change := func(handle string, d time.Duration) *v2.ChangeInvisibleDurationResponse {
		r, err := f.c.ChangeInvisibleDuration(f.ctx, &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "G1"},
			Topic: &v2.Resource{Name: "TopicN"}, ReceiptHandle: handle, InvisibleDuration: durationpb.New(d), MessageId: "ID1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ack := func(handle string) v2.Code {
		r, err := f.c.AckMessage(f.ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: "G1"}, Topic: &v2.Resource{Name: "TopicN"},
			Entries: []*v2.AckMessageEntry{{MessageId: "ID1", ReceiptHandle: handle}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Code
	}
	if r := change(h, 13*time.Hour); r.Status.Code != v2.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("13 h: %v", r.Status)
	}
	for _, bad := range []string{"", "garbage", "1 2 3", strings.Replace(h, " 0 0 ", " 0 7 ", 1)} {
		if c := ack(bad); c != v2.Code_INVALID_RECEIPT_HANDLE {
			t.Fatalf("forged %q: %v", bad, c)
		}
	}
	fields := strings.Fields(h)
	fields[7] = "99" // an offset never delivered, with a valid time
	if c := ack(strings.Join(fields, " ")); c != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("forged offset: %v", c)
	}
	fields = strings.Fields(h)
	fields[1] = "1000" // retrieved long ago: expired
	if c := ack(strings.Join(fields, " ")); c != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("expired: %v", c)
	}
	r := change(h, 0) // visible again at once, with a new handle
	if r.Status.Code != v2.Code_OK || r.ReceiptHandle == "" || r.ReceiptHandle == h {
		t.Fatalf("change: %v", r)
	}
	if c := ack(h); c != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("stale handle after a change: %v", c)
	}
	_, msgs = f.receive(recvReq("TopicN", "G1", 1, 30*time.Second), 15*time.Second)
	if len(msgs) != 1 || msgs[0].SystemProperties.GetDeliveryAttempt() != 2 {
		t.Fatalf("redelivery: %v", msgs)
	}
	if c := ack(msgs[0].SystemProperties.GetReceiptHandle()); c != v2.Code_OK {
		t.Fatalf("ack: %v", c)
	}
	if c := ack(msgs[0].SystemProperties.GetReceiptHandle()); c != v2.Code_OK {
		t.Fatalf("ack again (Apache answers OK): %v", c)
	}
}

func TestBadRequestsGetApacheCodes(t *testing.T) {
	f := start(t)
	f.topic("TopicN", "")
	f.topic("TopicF", "+message.type=FIFO")
	code := func(req *v2.ReceiveMessageRequest, timeout time.Duration) v2.Code {
		st, _ := f.receive(req, timeout)
		return st.Code
	}
	if c := code(recvReq("TopicN", "G1", 1, 5*time.Second), 15*time.Second); c != v2.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("invisible 5 s: %v", c)
	}
	if c := code(recvReq("Nope", "G1", 1, 30*time.Second), 15*time.Second); c != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("unknown topic: %v", c)
	}
	if c := code(recvReq("TopicN", "bad group!", 1, 30*time.Second), 15*time.Second); c != v2.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("bad group: %v", c)
	}
	if c := code(recvReq("TopicN", "G1", 1, 30*time.Second), 2*time.Second); c != v2.Code_ILLEGAL_POLLING_TIME {
		t.Fatalf("2 s deadline: %v", c)
	}
	sql := recvReq("TopicN", "G1", 1, 30*time.Second)
	sql.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_SQL, Expression: "a >"}
	if c := code(sql, 15*time.Second); c != v2.Code_ILLEGAL_FILTER_EXPRESSION {
		t.Fatalf("bad SQL: %v", c)
	}

	m := msg("TopicN", "ID1", "x")
	g := "g1"
	m.SystemProperties.MessageGroup = &g
	if r := f.send(m); r.Status.Code != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Fatalf("FIFO message to a NORMAL topic: %v", r.Status)
	}
	if r := f.send(msg("TopicF", "ID2", "x")); r.Status.Code != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Fatalf("NORMAL message to a FIFO topic: %v", r.Status)
	}
	m = msg("TopicF", "ID3", "x")
	m.SystemProperties.MessageGroup = &g
	if r := f.send(m); r.Status.Code != v2.Code_OK {
		t.Fatalf("FIFO message to a FIFO topic: %v", r.Status)
	}
	if r := f.send(msg("TopicN", "ID4", strings.Repeat("x", 4<<20+1))); r.Status.Code != v2.Code_MESSAGE_BODY_TOO_LARGE {
		t.Fatalf("large body: %v", r.Status)
	}
	if r := f.send(msg("TopicN", "", "x")); r.Status.Code != v2.Code_ILLEGAL_MESSAGE_ID {
		t.Fatalf("no id: %v", r.Status)
	}
	if r := f.send(msg("Nope", "ID5", "x")); r.Status.Code != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("unknown topic: %v", r.Status)
	}
	bad := msg("TopicN", "ID6", "x")
	bad.UserProperties["UNIQ_KEY"] = "x"
	if r := f.send(bad); r.Status.Code != v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY {
		t.Fatalf("system property key: %v", r.Status)
	}
	et, err := f.c.EndTransaction(f.ctx, &v2.EndTransactionRequest{Topic: &v2.Resource{Name: "TopicN"}, MessageId: "X",
		TransactionId: "X", Resolution: v2.TransactionResolution_COMMIT, Source: v2.TransactionSource_SOURCE_CLIENT})
	if err != nil || et.Status.Code != v2.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("unknown transaction: %v %v", err, et)
	}
	if cfg, _ := f.b.Topics().Get("TopicF"); cfg.Attributes["message.type"] != "FIFO" || cfg.Perm != protocol.PermRead|protocol.PermWrite {
		t.Fatalf("topic config %+v", cfg)
	}
}

func TestOffsetRPCsAndPullMessage(t *testing.T) {
	f := start(t)
	f.topic("TopicN", "")
	for i := range 8 {
		f.send(msg("TopicN", fmt.Sprintf("ID%d", i), fmt.Sprint(i)))
	}
	mq := &v2.MessageQueue{Topic: &v2.Resource{Name: "TopicN"}, Id: 1}
	g := &v2.Resource{Name: "PullG"}
	end, err := f.c.QueryOffset(f.ctx, &v2.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: v2.QueryOffsetPolicy_END})
	if err != nil || end.Status.Code != v2.Code_OK || end.Offset != 2 {
		t.Fatalf("END: %v %v", err, end)
	}
	got, _ := f.c.GetOffset(f.ctx, &v2.GetOffsetRequest{Group: g, MessageQueue: mq})
	if got.Status.Code != v2.Code_OFFSET_NOT_FOUND {
		t.Fatalf("no offset yet: %v", got.Status)
	}
	pull := func(off int64, wait time.Duration) (*v2.Status, []*v2.Message, int64) {
		st, err := f.c.PullMessage(f.ctx, &v2.PullMessageRequest{Group: g, MessageQueue: mq, Offset: off, BatchSize: 32,
			FilterExpression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}, LongPollingTimeout: durationpb.New(wait)})
		if err != nil {
			t.Fatal(err)
		}
		var status *v2.Status
		var msgs []*v2.Message
		next := int64(-1)
		for {
			r, err := st.Recv()
			if err != nil {
				return status, msgs, next
			}
			switch c := r.Content.(type) {
			case *v2.PullMessageResponse_Status:
				status = c.Status
			case *v2.PullMessageResponse_Message:
				msgs = append(msgs, c.Message)
			case *v2.PullMessageResponse_NextOffset:
				next = c.NextOffset
			}
		}
	}
	st, msgs, next := pull(0, 0)
	if st.Code != v2.Code_OK || len(msgs) != 2 || next != 2 {
		t.Fatalf("pull: %v %d %d", st, len(msgs), next)
	}
	up, _ := f.c.UpdateOffset(f.ctx, &v2.UpdateOffsetRequest{Group: g, MessageQueue: mq, Offset: next})
	got, _ = f.c.GetOffset(f.ctx, &v2.GetOffsetRequest{Group: g, MessageQueue: mq})
	if up.Status.Code != v2.Code_OK || got.Offset != 2 {
		t.Fatalf("update/get: %v %v", up, got)
	}
	st, msgs, next = pull(2, 200*time.Millisecond) // nothing new: a short long poll
	if st.Code != v2.Code_MESSAGE_NOT_FOUND || len(msgs) != 0 || next != 2 {
		t.Fatalf("pull at the end: %v %d %d", st, len(msgs), next)
	}
	bad := &v2.MessageQueue{Topic: &v2.Resource{Name: "TopicN"}, Id: 9}
	if r, _ := f.c.GetOffset(f.ctx, &v2.GetOffsetRequest{Group: g, MessageQueue: bad}); r.Status.Code != v2.Code_BAD_REQUEST {
		t.Fatalf("queue 9: %v", r.Status)
	}
	if r, _ := f.c.UpdateOffset(f.ctx, &v2.UpdateOffsetRequest{Group: g, MessageQueue: mq, Offset: -1}); r.Status.Code != v2.Code_ILLEGAL_OFFSET {
		t.Fatalf("offset -1: %v", r.Status)
	}
}
