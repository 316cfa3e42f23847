package proxy

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/broker"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// startAuth starts a broker with authentication and authorization on
// (Super user root/rootpw) and its gRPC endpoint.
func startAuth(t *testing.T) *fixture {
	f := start(t, func(o *broker.Options) {
		o.Auth = auth.Config{AuthenticationEnabled: true, AuthorizationEnabled: true,
			InitUser: &auth.InitUser{Username: "root", Password: "rootpw"}}
	})
	f.ctx = context.Background()
	return f
}

// as is a call context signed as a RocketMQ 5 client signs (no signature
// with an empty accessKey).
func as(accessKey, secretKey string) context.Context {
	const dt = "20261206T061500Z"
	kv := []string{"x-mq-client-id", "test@1@0@" + accessKey, "x-mq-language", "GOLANG", "x-mq-protocol", "v2", "x-mq-date-time", dt}
	if accessKey != "" {
		kv = append(kv, "authorization", auth.SignV2(accessKey, secretKey, dt))
	}
	return metadata.AppendToOutgoingContext(context.Background(), kv...)
}

// TestGRPCAuth: with access control on, unsigned calls and a wrong
// secret are refused (UNAUTHORIZED in the response's Status, nothing
// stored); a Normal user with Topic:orders Pub may send to orders and
// query its route, and is refused every consumer call, another topic and
// a subscription on Telemetry (the stream going on); the Super user may
// do all of it.
func TestGRPCAuth(t *testing.T) {
	f := startAuth(t)
	// Topic and user over remoting, signed by root.
	c, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	invoke := func(code int, ext map[string]string, body string) {
		t.Helper()
		cmd := remoting.NewRequest(code, ext, []byte(body))
		auth.SignCommand(cmd, "root", "rootpw")
		resp, err := c.Invoke(rctx, f.b.Addr(), cmd)
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("code %d: %v %+v", code, err, resp)
		}
	}
	for _, tp := range []string{"orders", "payments"} {
		invoke(remoting.UpdateAndCreateTopic, map[string]string{"topic": tp, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, "")
	}
	invoke(remoting.AuthCreateUser, map[string]string{"username": "app"}, `{"username":"app","password":"apppw","userType":"Normal"}`)
	invoke(remoting.AuthCreateACL, map[string]string{"subject": "User:app"},
		`{"subject":"User:app","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:orders","actions":["Pub"],"sourceIps":[],"decision":"Allow"}]}]}`)

	stored := func() int64 {
		var n int64
		for q := int32(0); q < 4; q++ {
			n += f.b.Store().GetMaxOffsetInQueue("orders", q)
		}
		return n
	}
	send := func(ctx context.Context, topic string) *v2.Status {
		t.Helper()
		r, err := f.c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{msg(topic, "ID-"+topic, "hello")}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	unauthorized := func(what string, st *v2.Status) {
		t.Helper()
		if st.GetCode() != v2.Code_UNAUTHORIZED {
			t.Fatalf("%s: want UNAUTHORIZED, got %v", what, st)
		}
	}
	unauthorized("unsigned", send(as("", ""), "orders"))
	unauthorized("wrong secret", send(as("app", "wrong"), "orders"))
	unauthorized("unknown user", send(as("eve", "apppw"), "orders"))
	if st := send(as("app", "wrong"), "orders"); st.Message != "check signature failed." {
		t.Fatalf("remark: %v", st)
	}
	if n := stored(); n != 0 {
		t.Fatalf("refused sends stored %d messages", n)
	}

	app, root := as("app", "apppw"), as("root", "rootpw")
	if st := send(app, "orders"); st.Code != v2.Code_OK {
		t.Fatalf("app send: %v", st)
	}
	if n := stored(); n != 1 {
		t.Fatalf("stored %d", n)
	}
	unauthorized("app send to payments", send(app, "payments"))
	qr, err := f.c.QueryRoute(app, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "orders"}})
	if err != nil || qr.Status.Code != v2.Code_OK {
		t.Fatalf("app route: %v %v", err, qr)
	}

	// Everything a consumer does, refused to app, allowed to root.
	group := &v2.Resource{Name: "g1"}
	orders := &v2.Resource{Name: "orders"}
	calls := map[string]func(ctx context.Context) *v2.Status{
		"Heartbeat": func(ctx context.Context) *v2.Status {
			r, _ := f.c.Heartbeat(ctx, &v2.HeartbeatRequest{Group: group, ClientType: v2.ClientType_SIMPLE_CONSUMER})
			return r.GetStatus()
		},
		"QueryAssignment": func(ctx context.Context) *v2.Status {
			r, _ := f.c.QueryAssignment(ctx, &v2.QueryAssignmentRequest{Topic: orders, Group: group})
			return r.GetStatus()
		},
		"GetOffset": func(ctx context.Context) *v2.Status {
			r, _ := f.c.GetOffset(ctx, &v2.GetOffsetRequest{Group: group, MessageQueue: &v2.MessageQueue{Topic: orders}})
			return r.GetStatus()
		},
		"ReceiveMessage": func(ctx context.Context) *v2.Status {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			st, err := f.c.ReceiveMessage(ctx, recvReq("orders", "g1", 1, 20*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			r, err := st.Recv()
			if err != nil {
				t.Fatalf("receive: %v", err)
			}
			for { // drain to the end
				if _, err := st.Recv(); err != nil {
					break
				}
			}
			return r.GetStatus()
		},
	}
	for name, call := range calls {
		unauthorized("app "+name, call(app))
		if st := call(root); st.GetCode() == v2.Code_UNAUTHORIZED {
			t.Fatalf("root %s: %v", name, st)
		}
	}
	if st := send(root, "payments"); st.Code != v2.Code_OK {
		t.Fatalf("root send: %v", st)
	}

	// Telemetry: a refused Settings is answered with a status and the
	// stream goes on; an allowed one gets its settings.
	tctx, tcancel := context.WithTimeout(app, 10*time.Second)
	defer tcancel()
	tel, err := f.c.Telemetry(tctx)
	if err != nil {
		t.Fatal(err)
	}
	ct, pt := v2.ClientType_SIMPLE_CONSUMER, v2.ClientType_PRODUCER
	if err := tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &ct,
		RequestTimeout: durationpb.New(3 * time.Second),
		PubSub:         &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: group}}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := tel.Recv()
	if err != nil {
		t.Fatal(err)
	}
	unauthorized("app telemetry subscription", got.GetStatus())
	if got.GetSettings() != nil {
		t.Fatalf("refused settings answered: %v", got)
	}
	if err := tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &pt,
		PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{orders}}}}}}); err != nil {
		t.Fatal(err)
	}
	got, err = tel.Recv()
	if err != nil || got.GetStatus().GetCode() != v2.Code_OK || got.GetSettings().GetPublishing() == nil {
		t.Fatalf("app telemetry publishing: %v %v", err, got)
	}
	tel.CloseSend()
}

// TestGRPCChecks_EveryRPC: every request message of the service has a
// rule (an unknown one is for Super users only), and a request without
// the names its rule needs is refused, not let through.
func TestGRPCChecks_EveryRPC(t *testing.T) {
	sd := v2.File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService")
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		req := newMessage("/apache.rocketmq.v2.MessagingService/"+string(m.Name()), false)
		if req == nil {
			t.Fatalf("%s: no request type", m.Name())
		}
		checks, err := grpcChecks(req)
		for _, c := range checks {
			if c.SuperOnly {
				t.Fatalf("%s has no rule", m.Name())
			}
		}
		switch m.Name() {
		case "Heartbeat", "NotifyClientTermination", "Telemetry": // producers and commands other than Settings
			if err != nil || checks != nil {
				t.Fatalf("%s empty: %v %v", m.Name(), checks, err)
			}
		default:
			if err == nil {
				t.Fatalf("%s without names: want an error, got %v", m.Name(), checks)
			}
		}
	}
	if checks, _ := grpcChecks(&v2.Status{}); len(checks) != 1 || !checks[0].SuperOnly {
		t.Fatalf("unknown message: %v", checks)
	}
}
