package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// nodeClientDir holds the pinned Node.js client (package-lock.json).
const nodeClientDir = "nodejs"

// nodeModules makes sure the pinned client is installed (npm ci) and
// returns the node binary. .ci/run installs node and npm when missing.
func nodeModules(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: apt-get install nodejs npm (.ci/run does), then npm ci in e2e/nodejs")
	}
	if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "rocketmq-client-nodejs", "package.json")); err == nil {
		return node
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = nodeClientDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in e2e/nodejs: %v\n%s", err, out)
	}
	return node
}

// grpcBroker is cmd/broker run with its gRPC endpoint on a free port; it
// can be killed and started again on the same store and ports.
type grpcBroker struct {
	addr, grpcAddr, nsAddr string
	bin, dir               string
	admin                  *remoting.Client
	cmd                    *exec.Cmd
	logs                   bytes.Buffer
}

func startGRPCBroker(t *testing.T) *grpcBroker {
	t.Helper()
	dir := t.TempDir()
	g := &grpcBroker{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), grpcAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		nsAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), bin: filepath.Join(dir, "broker"), dir: dir}
	if out, err := exec.Command("go", "build", "-o", g.bin, "github.com/rocketstore/rocketstore/cmd/broker").CombinedOutput(); err != nil {
		t.Fatalf("building the broker: %v\n%s", err, out)
	}
	g.admin = adminClient(t)
	t.Cleanup(func() {
		if g.cmd != nil {
			stopChild(g.cmd)
		}
		if t.Failed() {
			t.Logf("broker log:\n%s", g.logs.String())
		}
	})
	g.start(t)
	return g
}

// start runs the broker and waits until both its ports answer.
func (g *grpcBroker) start(t *testing.T) {
	t.Helper()
	_, gport, _ := net.SplitHostPort(g.grpcAddr)
	conf := filepath.Join(g.dir, "broker.conf") // transaction checks come soon
	require.NoError(t, os.WriteFile(conf, []byte("transactionCheckInterval=1000\ntransactionTimeOut=1000\n"), 0o644))
	g.cmd = exec.Command(g.bin, "-c", conf, "-namesrv.listen", g.nsAddr, "-listen", g.addr,
		"-store.dir", filepath.Join(g.dir, "store"), "-grpcServerPort", gport)
	g.cmd.Stderr = &g.logs
	require.NoError(t, g.cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", g.grpcAddr, time.Second)
		if err == nil {
			c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := g.admin.Invoke(ctx, g.addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
			cancel()
			if err == nil && resp.Code == remoting.Success {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not come up:\n%s", g.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill SIGKILLs the broker and waits for it to be gone.
func (g *grpcBroker) kill() {
	g.cmd.Process.Kill()
	g.cmd.Wait()
	g.cmd = nil
}

func (g *grpcBroker) topic(t *testing.T, name, messageType string) {
	ext := map[string]string{"topic": name, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}
	if messageType != "" {
		ext["attributes"] = "+message.type=" + messageType
	}
	resp := call(t, g.admin, g.addr, remoting.UpdateAndCreateTopic, ext, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

func (g *grpcBroker) group(t *testing.T, name string, orderly bool) {
	body := fmt.Sprintf(`{"groupName":%q,"consumeEnable":true,"consumeMessageOrderly":%t,"retryMaxTimes":16}`, name, orderly)
	resp := call(t, g.admin, g.addr, remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(body))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// runNode runs one scenario of e2e/nodejs/scenario.js and decodes its result.
func runNode(t *testing.T, node string, g *grpcBroker, scenario, topic, group string, count int, out any, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "scenario.js", scenario)
	cmd.Dir = nodeClientDir
	cmd.Env = append(os.Environ(), "ENDPOINT="+g.grpcAddr, "TOPIC="+topic, "GROUP="+group,
		"COUNT="+strconv.Itoa(count), "DEADLINE_MS=75000")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node scenario %s: %s", scenario, stderr.String())
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout), out), "output %q", stdout)
}

type nodeMessage struct {
	ID       string            `json:"id"`
	Tag      string            `json:"tag"`
	Keys     []string          `json:"keys"`
	Body     string            `json:"body"`
	Attempt  int               `json:"attempt"`
	Group    string            `json:"group"`
	Props    map[string]string `json:"props"`
	Delivery int64             `json:"delivery"`
}

// TestE2E_NodeJSClient runs Apache's Node.js client (npm
// rocketmq-client-nodejs 1.0.8, RocketMQ 5 over gRPC) against cmd/broker.
func TestE2E_NodeJSClient(t *testing.T) {
	node := nodeModules(t)
	g := startGRPCBroker(t)

	t.Run("NormalTagsKeysPropertiesAck", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodeNormal", "NORMAL")
		var res struct {
			Sent []struct {
				ID  string `json:"id"`
				Tag string `json:"tag"`
				I   int    `json:"i"`
			} `json:"sent"`
			Received []nodeMessage `json:"received"`
			Again    int           `json:"again"`
			SQL      []nodeMessage `json:"sql"`
		}
		runNode(t, node, g, "normal", "NodeNormal", "NodeGroupN", 12, &res)
		want, odd := map[string]int{}, map[string]bool{}
		for _, s := range res.Sent {
			if s.Tag == "TagA" {
				want[s.ID] = s.I
			} else {
				odd[s.ID] = true
			}
		}
		require.Len(t, res.Received, len(want))
		for _, m := range res.Received {
			i, ok := want[m.ID]
			require.True(t, ok, "received %s, not a TagA message sent", m.ID)
			delete(want, m.ID)
			require.Equal(t, "TagA", m.Tag)
			require.Equal(t, fmt.Sprintf("body-%d", i), m.Body)
			require.Equal(t, []string{fmt.Sprintf("key-%d", i), fmt.Sprintf("k%d", i)}, m.Keys)
			require.Equal(t, map[string]string{"index": strconv.Itoa(i), "parity": "even"}, m.Props)
			require.Equal(t, 1, m.Attempt)
		}
		require.Zero(t, res.Again, "acked messages came back")
		require.Len(t, res.SQL, len(odd), "the SQL92 group")
		for _, m := range res.SQL {
			require.True(t, odd[m.ID], "SQL92 filter let %s through", m.ID)
			require.Equal(t, "odd", m.Props["parity"])
		}
	})

	t.Run("InvisibleTimeAndChangeInvisibleDuration", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodeInvisible", "")
		var res struct {
			ID           string   `json:"id"`
			Attempts     []int    `json:"attempts"`
			IDs          []string `json:"ids"`
			ExpiredAfter int64    `json:"expiredAfter"`
			ChangedAfter int64    `json:"changedAfter"`
			Changed      bool     `json:"changed"`
		}
		runNode(t, node, g, "invisible", "NodeInvisible", "NodeGroupI", 1, &res)
		require.Equal(t, []int{1, 2, 3}, res.Attempts)
		require.Equal(t, []string{res.ID, res.ID, res.ID}, res.IDs)
		require.True(t, res.Changed, "changeInvisibleDuration gave no new receipt handle")
		require.Greater(t, res.ExpiredAfter, int64(8000), "redelivered before its 10 s invisible time")
		require.Less(t, res.ChangedAfter, int64(8000), "a 1 s invisible duration took as long as the 10 s one")
	})

	t.Run("FIFO", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodeFifo", "FIFO")
		g.group(t, "NodeGroupF", true)
		var res struct {
			Received []nodeMessage `json:"received"`
		}
		runNode(t, node, g, "fifo", "NodeFifo", "NodeGroupF", 10, &res)
		var bodies []string
		for _, m := range res.Received {
			require.Equal(t, "order-1", m.Group)
			bodies = append(bodies, m.Body)
		}
		require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, bodies)
	})

	t.Run("Delay", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodeDelay", "DELAY")
		var res struct {
			ID         string `json:"id"`
			Got        string `json:"got"`
			DeliverAt  int64  `json:"deliverAt"`
			ReceivedAt int64  `json:"receivedAt"`
			Delivery   int64  `json:"delivery"`
		}
		runNode(t, node, g, "delay", "NodeDelay", "NodeGroupD", 1, &res)
		require.Equal(t, res.ID, res.Got)
		require.GreaterOrEqual(t, res.ReceivedAt, res.DeliverAt-1000, "delivered well before its time") // the timer's precision is 1 s
		require.Equal(t, res.DeliverAt, res.Delivery, "delivery_timestamp")
	})

	t.Run("WrongMessageTypeRefused", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodeNormal2", "NORMAL")
		var res struct {
			Error string `json:"error"`
		}
		runNode(t, node, g, "wrongtype", "NodeNormal2", "NodeGroupW", 1, &res)
		require.Contains(t, res.Error, "message type")
	})

	t.Run("TransactionCommitRollbackCheckBack", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodeTx", "TRANSACTION")
		var res struct {
			Received []string `json:"received"`
			Extra    int      `json:"extra"`
			Checked  []string `json:"checked"`
		}
		runNode(t, node, g, "transaction", "NodeTx", "NodeGroupT", 3, &res)
		require.Equal(t, []string{"commit", "open"}, res.Received, "the committed one and the one committed at the check")
		require.Zero(t, res.Extra, "the rolled back message was delivered")
		require.Contains(t, res.Checked, "open", "the broker never checked the open transaction back")
	})

	t.Run("PushConsumer", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodePush", "")
		var res struct {
			Sent []string `json:"sent"`
			Seen []string `json:"seen"`
		}
		runNode(t, node, g, "push", "NodePush", "NodeGroupP", 10, &res)
		slices.Sort(res.Sent)
		seen := slices.Clone(res.Seen)
		slices.Sort(seen)
		require.Equal(t, res.Sent, slices.Compact(seen), "every message consumed")
	})

	t.Run("PushConsumerFIFO", func(t *testing.T) {
		t.Parallel()
		g.topic(t, "NodePushFifo", "FIFO")
		g.group(t, "NodeGroupPF", true)
		var res struct {
			Bodies []string `json:"bodies"`
		}
		runNode(t, node, g, "push", "NodePushFifo", "NodeGroupPF", 10, &res, "FIFO=true")
		var want []string
		for i := range 10 {
			want = append(want, fmt.Sprintf("push-%d", i))
		}
		require.Equal(t, want, res.Bodies, "a FIFO push consumer gets a message group in order, once")
	})
}
