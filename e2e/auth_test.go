package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// authBroker is cmd/broker with access control on, run as a child
// process over one store, so that it can be stopped (SIGTERM) or killed
// (SIGKILL) and started again.
type authBroker struct {
	t              *testing.T
	bin, conf, dir string
	ns, addr       string
	cmd            *exec.Cmd
	exited         chan struct{}
	rc             *remoting.Client // the test's own calls (over TLS when tlsOnly)
}

const (
	rootUser, rootPass   = "root", "root-secret-1"
	aliceUser, alicePass = "alice", "alice-secret-1"
)

func startAuthBroker(t *testing.T, extraConf string, tlsOnly bool) *authBroker {
	t.Helper()
	dir := t.TempDir()
	b := &authBroker{t: t, dir: dir, bin: filepath.Join(dir, "broker"), conf: filepath.Join(dir, "broker.conf")}
	ro := remoting.Options{}
	if tlsOnly {
		ro.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	rc, err := remoting.NewClient(ro)
	require.NoError(t, err)
	b.rc = rc
	t.Cleanup(func() { rc.Close() })
	build := exec.Command("go", "build", "-o", b.bin, "github.com/rocketstore/rocketstore/cmd/broker")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the broker: %s", out)
	conf := fmt.Sprintf(`brokerClusterName=AuthCluster
authenticationEnabled=true
authorizationEnabled=true
authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider
authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider
authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider
authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider
initAuthenticationUser={"username":"%s","password":"%s"}
innerClientAuthenticationCredentials={"accessKey":"%s","secretKey":"%s"}
messageDelayLevel=100ms 100ms 100ms 200ms
mappedFileSizeCommitLog=67108864
%s`, rootUser, rootPass, rootUser, rootPass, extraConf)
	require.NoError(t, os.WriteFile(b.conf, []byte(conf), 0o600))
	b.ns = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b.start()
	t.Cleanup(func() { b.stop(syscall.SIGTERM) })
	return b
}

func (b *authBroker) start() {
	t := b.t
	t.Helper()
	b.cmd = exec.Command(b.bin, "-c", b.conf, "-namesrv.listen", b.ns, "-listen", b.addr, "-store.dir", filepath.Join(b.dir, "store"))
	if testing.Verbose() {
		b.cmd.Stderr = os.Stderr
	}
	require.NoError(t, b.cmd.Start())
	b.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(b.cmd, b.exited)
	// Ready when the name server routes the broker's default topic (an
	// open read), which it does once the broker registered (signed).
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := b.rc.Invoke(ctx, b.ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
		return err == nil && resp.Code == remoting.Success
	}, 30*time.Second, 50*time.Millisecond, "the broker did not come up")
}

func (b *authBroker) stop(sig syscall.Signal) {
	if b.cmd == nil {
		return
	}
	b.cmd.Process.Signal(sig)
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		b.cmd.Process.Kill()
		<-b.exited
	}
	b.cmd = nil
}

// call sends a request signed with ak/sk ("" sends it unsigned) to the
// broker.
func (b *authBroker) call(ak, sk string, code int, ext map[string]string, body []byte) *remoting.Command {
	b.t.Helper()
	return b.callAt(b.addr, ak, sk, remoting.NewRequest(code, ext, body))
}

func (b *authBroker) callAt(addr, ak, sk string, req *remoting.Command) *remoting.Command {
	b.t.Helper()
	if ak != "" {
		auth.SignCommand(req, ak, sk)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := b.rc.Invoke(ctx, addr, req)
	require.NoError(b.t, err)
	return resp
}

func (b *authBroker) root(code int, ext map[string]string, body any) *remoting.Command {
	b.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(b.t, err)
	}
	resp := b.call(rootUser, rootPass, code, ext, raw)
	require.Equal(b.t, remoting.Success, resp.Code, "code %d: %s", code, resp.Remark)
	return resp
}

func (b *authBroker) createTopic(topic string) {
	b.t.Helper()
	b.root(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil)
	require.Eventually(b.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := b.rc.Invoke(ctx, b.ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		return err == nil && resp.Code == remoting.Success
	}, 10*time.Second, 20*time.Millisecond, "no route of %s", topic)
}

// maxOffset is the sum of the topic's queues' max offsets (messages
// stored), asked as root.
func (b *authBroker) maxOffset(topic string) int64 {
	b.t.Helper()
	var n int64
	for q := range 2 {
		resp := b.root(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": fmt.Sprint(q)}, nil)
		var v int64
		fmt.Sscan(resp.Ext("offset"), &v)
		n += v
	}
	return n
}

func authProducer(t *testing.T, b *authBroker, ak, sk string, more ...producer.Option) rocketmq.Producer {
	t.Helper()
	opts := []producer.Option{producer.WithNameServer([]string{b.ns}), producer.WithGroupName(unique("APG")),
		producer.WithInstanceName(unique("api")), producer.WithRetry(0), producer.WithSendMsgTimeout(5 * time.Second)}
	opts = append(opts, more...)
	if ak != "" {
		opts = append(opts, producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}))
	}
	p, err := rocketmq.NewProducer(opts...)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { p.Shutdown() })
	return p
}

func sendOne(p rocketmq.Producer, topic, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
	if err != nil {
		return err
	}
	if res.Status != primitive.SendOK {
		return fmt.Errorf("send status %v", res.Status)
	}
	return nil
}

// requireRefused says the error is the broker's NO_PERMISSION.
func requireRefused(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.Contains(t, err.Error(), "16", what)
}

// TestAuth_GoClientWithCredentials runs the official Go client with
// credentials against cmd/broker with authentication and authorization
// on, through restarts.
func TestAuth_GoClientWithCredentials(t *testing.T) {
	b := startAuthBroker(t, "", false)
	for _, topic := range []string{"orders", "forbidden", "secret1", "second", "iponly"} {
		b.createTopic(topic)
	}

	// Unauthenticated: refused, nothing stored.
	anon := authProducer(t, b, "", "")
	requireRefused(t, sendOne(anon, "orders", "anon"), "an unsigned send")
	resp := b.call("", "", remoting.GetMaxOffset, map[string]string{"topic": "orders", "queueId": "0"}, nil)
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "username cannot be null.", resp.Remark)

	// The Super user makes a normal user and its policies.
	b.root(remoting.AuthCreateUser, map[string]string{"username": aliceUser}, auth.UserInfo{Password: alicePass, UserType: "Normal"})
	b.root(remoting.AuthCreateACL, map[string]string{"subject": "User:" + aliceUser}, auth.AclInfo{Subject: "User:" + aliceUser,
		Policies: []auth.PolicyInfo{{PolicyType: "Custom", Entries: []auth.EntryInfo{
			{Resource: "Topic:orders", Actions: []string{"Pub", "Sub"}, Decision: "Allow"},
			{Resource: "Topic:sec*", Actions: []string{"Pub"}, Decision: "Allow"},
			{Resource: "Topic:secret*", Actions: []string{"Pub"}, Decision: "Deny"},
			{Resource: "Topic:iponly", Actions: []string{"Pub"}, Decision: "Allow", SourceIps: []string{"10.0.0.0/8"}},
			{Resource: "Group:gA", Actions: []string{"Sub"}, Decision: "Allow"},
			{Resource: "Group:gDLQ", Actions: []string{"Sub"}, Decision: "Allow"},
		}}}})

	checkPolicies := func(t *testing.T) {
		p := authProducer(t, b, aliceUser, alicePass)
		require.NoError(t, sendOne(p, "orders", "o1"))
		require.NoError(t, sendOne(p, "second", "s"), "Topic:sec* allows")
		before := b.maxOffset("secret1")
		requireRefused(t, sendOne(p, "secret1", "x"), "Topic:secret* Deny beats the shorter Topic:sec* Allow")
		requireRefused(t, sendOne(p, "forbidden", "x"), "no entry")
		requireRefused(t, sendOne(p, "iponly", "x"), "a source-IP entry for 10.0.0.0/8 refuses 127.0.0.1")
		require.Equal(t, before, b.maxOffset("secret1"), "nothing stored")
		bad := authProducer(t, b, aliceUser, "wrong-secret")
		n := b.maxOffset("orders")
		requireRefused(t, sendOne(bad, "orders", "bad"), "a wrong secret")
		require.Equal(t, n, b.maxOffset("orders"), "nothing stored")
	}
	t.Run("policies", checkPolicies)

	t.Run("consume with retry", func(t *testing.T) {
		p := authProducer(t, b, aliceUser, alicePass)
		// The retry topic, made by the Super user so the client finds
		// its route at once.
		b.createTopic("%RETRY%gA")
		require.NoError(t, sendOne(p, "orders", "retry-me"))
		var mu sync.Mutex
		var attempts []int32
		pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{b.ns}), consumer.WithGroupName("gA"),
			consumer.WithInstance(unique("aci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithCredentials(primitive.Credentials{AccessKey: aliceUser, SecretKey: alicePass}))
		require.NoError(t, err)
		require.NoError(t, pc.Subscribe("orders", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			retry := false
			for _, m := range msgs {
				if string(m.Body) == "retry-me" {
					attempts = append(attempts, m.ReconsumeTimes)
					retry = len(attempts) == 1
				}
			}
			if retry {
				return consumer.ConsumeRetryLater, nil
			}
			return consumer.ConsumeSuccess, nil
		}))
		require.NoError(t, pc.Start())
		defer pc.Shutdown()
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(attempts) >= 2
		}, 60*time.Second, 20*time.Millisecond, "consumed, sent back to %%RETRY%%gA, consumed again")
		mu.Lock()
		require.Equal(t, []int32{0, 1}, attempts[:2])
		mu.Unlock()

		// A message that keeps failing ends in the group's dead letter
		// topic: the client's send-backs are Group Sub.
		b.createTopic("%RETRY%gDLQ")
		require.NoError(t, sendOne(p, "orders", "dead-letter"))
		var dead atomic.Int32
		dc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{b.ns}), consumer.WithGroupName("gDLQ"),
			consumer.WithInstance(unique("dci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithMaxReconsumeTimes(1),
			consumer.WithCredentials(primitive.Credentials{AccessKey: aliceUser, SecretKey: alicePass}))
		require.NoError(t, err)
		require.NoError(t, dc.Subscribe("orders", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if string(m.Body) == "dead-letter" {
					dead.Add(1)
					return consumer.ConsumeRetryLater, nil
				}
			}
			return consumer.ConsumeSuccess, nil
		}))
		require.NoError(t, dc.Start())
		defer dc.Shutdown()
		require.Eventually(t, func() bool {
			resp := b.call(rootUser, rootPass, remoting.GetMaxOffset, map[string]string{"topic": "%DLQ%gDLQ", "queueId": "0"}, nil)
			return resp.Code == remoting.Success && resp.Ext("offset") == "1"
		}, 60*time.Second, 50*time.Millisecond, "the message reaches %%DLQ%%gDLQ")
		require.GreaterOrEqual(t, dead.Load(), int32(2), "delivered, retried once, then dead")

		// A group without a policy is refused (pull and heartbeat).
		resp := b.call(aliceUser, alicePass, remoting.PullMessage, map[string]string{"consumerGroup": "gB", "topic": "orders",
			"queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0",
			"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}, nil)
		require.Equal(t, remoting.NoPermission, resp.Code)
		require.Equal(t, "User:alice has no permission to access Group:gB from 127.0.0.1, no matched policies.", resp.Remark)
	})

	t.Run("altered frame", func(t *testing.T) {
		c, err := remoting.NewClient(remoting.Options{})
		require.NoError(t, err)
		defer c.Close()
		send := func(mut func(*remoting.Command)) *remoting.Command {
			req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"a": "APG", "b": "orders", "c": "TBW102",
				"d": "2", "e": "0", "f": "0", "g": fmt.Sprint(time.Now().UnixMilli()), "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}, []byte("signed body"))
			auth.SignCommand(req, aliceUser, alicePass)
			mut(req)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := c.Invoke(ctx, b.addr, req)
			require.NoError(t, err)
			return resp
		}
		n := b.maxOffset("orders")
		require.Equal(t, remoting.Success, send(func(*remoting.Command) {}).Code)
		require.Equal(t, n+1, b.maxOffset("orders"))
		resp := send(func(r *remoting.Command) { r.Body = []byte("signed bodY") })
		require.Equal(t, remoting.NoPermission, resp.Code)
		require.Equal(t, "check signature failed.", resp.Remark)
		resp = send(func(r *remoting.Command) { r.ExtFields["b"] = "second" })
		require.Equal(t, remoting.NoPermission, resp.Code)
		resp = send(func(r *remoting.Command) { r.ExtFields["e"] = "1" })
		require.Equal(t, remoting.NoPermission, resp.Code)
		require.Equal(t, n+1, b.maxOffset("orders"), "nothing stored of the altered frames")
	})

	t.Run("normal users and admin codes", func(t *testing.T) {
		for _, code := range []int{remoting.UpdateBrokerConfig, remoting.GetBrokerConfig, remoting.GetAllTopicConfig,
			remoting.UpdateAndCreateSubscriptionGroup, remoting.GetBrokerRuntimeInfo, remoting.AuthCreateUser,
			remoting.AuthGetUser, remoting.AuthListUser, remoting.AuthCreateACL, remoting.AuthListACL, remoting.AuthDeleteUser} {
			resp := b.call(aliceUser, alicePass, code, map[string]string{"username": aliceUser, "subject": "User:" + aliceUser, "topic": "orders"},
				[]byte(`{"username":"eve","password":"x","userType":"Super"}`))
			require.Equal(t, remoting.NoPermission, resp.Code, "code %d", code)
		}
		resp := b.call(aliceUser, alicePass, remoting.UpdateAndCreateTopic, map[string]string{"topic": "orders", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
		require.Equal(t, remoting.NoPermission, resp.Code, "no Create on Topic:orders")
		// The name server's writes need a Super user too.
		resp = b.callAt(b.ns, aliceUser, alicePass, remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "n", "key": "k", "value": "v"}, nil))
		require.Equal(t, remoting.NoPermission, resp.Code)
		resp = b.callAt(b.ns, "", "", remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true")))
		require.Equal(t, remoting.NoPermission, resp.Code)
		resp = b.callAt(b.ns, rootUser, rootPass, remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "n", "key": "k", "value": "v"}, nil))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	})

	t.Run("no answer carries a password", func(t *testing.T) {
		for _, resp := range []*remoting.Command{
			b.root(remoting.AuthGetUser, map[string]string{"username": aliceUser}, nil),
			b.root(remoting.AuthListUser, map[string]string{}, nil),
			b.root(remoting.AuthGetACL, map[string]string{"subject": "User:" + aliceUser}, nil),
			b.root(remoting.AuthListACL, map[string]string{}, nil),
			b.root(remoting.GetBrokerConfig, nil, nil),
		} {
			require.NotContains(t, string(resp.Body), alicePass)
			require.NotContains(t, string(resp.Body), rootPass)
			require.NotContains(t, strings.ToLower(string(resp.Body)), `"password"`)
		}
		var ui auth.UserInfo
		require.NoError(t, json.Unmarshal(b.root(remoting.AuthGetUser, map[string]string{"username": aliceUser}, nil).Body, &ui))
		require.Equal(t, auth.UserInfo{Username: aliceUser, UserType: "Normal", UserStatus: "enable"}, ui)
	})

	t.Run("mqadmin", func(t *testing.T) { mqadminAuth(t, b) })

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		b.stop(sig)
		b.start()
		t.Run("after "+sig.String(), checkPolicies)
	}
}

// mqadminAuth runs mqadmin's ACL 2.0 subcommands against the broker, as
// root through $ROCKETMQ_HOME/conf/tools.yml, and without credentials.
func mqadminAuth(t *testing.T, b *authBroker) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "conf"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, "conf", "tools.yml"),
		[]byte(fmt.Sprintf("accessKey: %s\nsecretKey: %s\n", rootUser, rootPass)), 0o600))
	env := []string{"ROCKETMQ_HOME=" + home}
	run := func(args ...string) mqResult {
		return runMQAdmin(t, env, append(args, "-n", b.ns, "--timeout", "30s")...)
	}
	ok := func(args ...string) string {
		t.Helper()
		r := run(args...)
		require.Equal(t, 0, r.code, "mqadmin %v: %s%s", args, r.stderr, r.stdout)
		return r.stdout
	}
	ok("createUser", "-c", "AuthCluster", "-u", "bob", "-p", "bob-secret-1")
	ok("createAcl", "-c", "AuthCluster", "-s", "User:bob", "-r", "Topic:orders,Group:gBob", "-a", "Pub,Sub", "-d", "Allow", "-i", "127.0.0.1,10.0.0.0/8")
	ok("updateAcl", "-b", b.addr, "-s", "User:bob", "-r", "Topic:forbidden", "-a", "Pub", "-d", "Deny")
	var users map[string][]auth.UserInfo
	require.NoError(t, json.Unmarshal([]byte(ok("getUser", "-b", b.addr, "-u", "bob", "--json")), &users))
	require.Equal(t, []auth.UserInfo{{Username: "bob", UserType: "Normal", UserStatus: "enable"}}, users[b.addr])
	out := ok("listUser", "-c", "AuthCluster")
	require.Contains(t, out, "bob")
	require.NotContains(t, out, "bob-secret-1")
	require.NotContains(t, out, rootPass)
	var acls map[string][]auth.AclInfo
	require.NoError(t, json.Unmarshal([]byte(ok("getAcl", "-b", b.addr, "-s", "User:bob", "--json")), &acls))
	require.Len(t, acls[b.addr], 1)
	require.Len(t, acls[b.addr][0].Policies[0].Entries, 3)
	require.Contains(t, ok("listAcl", "-b", b.addr, "-r", "Topic:forbidden"), "Deny")

	p := authProducer(t, b, "bob", "bob-secret-1")
	require.NoError(t, sendOne(p, "orders", "from bob"))
	requireRefused(t, sendOne(p, "forbidden", "x"), "bob's Deny")
	ok("updateUser", "-b", b.addr, "-u", "bob", "-s", "disable")
	requireRefused(t, sendOne(p, "orders", "x"), "a disabled user")
	ok("copyAcl", "-f", b.addr, "-t", b.addr, "-s", "User:bob")
	ok("deleteAcl", "-b", b.addr, "-s", "User:bob", "-r", "Topic:forbidden")
	require.NotContains(t, ok("getAcl", "-b", b.addr, "-s", "User:bob"), "Topic:forbidden")
	ok("deleteUser", "-c", "AuthCluster", "-u", "bob")
	require.NotContains(t, ok("listUser", "-b", b.addr), "bob")
	require.NotEqual(t, 0, run("copyUser", "-f", b.addr, "-t", b.addr, "-u", "alice").code, "passwords are never answered")

	// Without credentials (no tools.yml) the broker refuses them.
	r := runMQAdmin(t, []string{"ROCKETMQ_HOME="}, "createUser", "-b", b.addr, "-u", "eve", "-p", "eve-secret", "-t", "Super", "-n", b.ns, "--timeout", "30s")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "code 16")
	r = runMQAdmin(t, []string{"ROCKETMQ_HOME="}, "topicRoute", "-t", "orders", "-n", b.ns, "--timeout", "30s")
	require.Equal(t, 0, r.code, "route reads stay open: %s", r.stderr)
}
