package e2e

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

var long = flag.Bool("long", false, "also run the long tests (a 65 s timer)")

// arrivals records when each message body was consumed, and the message.
type arrivals struct {
	mu  sync.Mutex
	at  map[string][]time.Time
	off map[string]map[int64]bool // CommitLog offsets each body was read from
	msg map[string]*primitive.MessageExt
	all map[string][]*primitive.MessageExt
	ch  chan struct{}
}

func newArrivals() *arrivals {
	return &arrivals{at: map[string][]time.Time{}, off: map[string]map[int64]bool{}, all: map[string][]*primitive.MessageExt{}, msg: map[string]*primitive.MessageExt{}, ch: make(chan struct{}, 1<<12)}
}

func (a *arrivals) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now()
	a.mu.Lock()
	for _, m := range msgs {
		a.at[string(m.Body)] = append(a.at[string(m.Body)], now)
		a.msg[string(m.Body)] = m
		a.all[string(m.Body)] = append(a.all[string(m.Body)], m)
		if a.off[string(m.Body)] == nil {
			a.off[string(m.Body)] = map[int64]bool{}
		}
		a.off[string(m.Body)][m.CommitLogOffset] = true
	}
	a.mu.Unlock()
	for range msgs {
		select {
		case a.ch <- struct{}{}:
		default:
		}
	}
	return consumer.ConsumeSuccess, nil
}

// waitAll waits until every body has arrived at least once.
func (a *arrivals) waitAll(t *testing.T, bodies []string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		a.mu.Lock()
		missing := ""
		for _, b := range bodies {
			if len(a.at[b]) == 0 {
				missing = b
				break
			}
		}
		a.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-a.ch:
		case <-deadline:
			t.Fatalf("timer message %q did not arrive within %v", missing, timeout)
		}
	}
}

// pushConsumer subscribes a new group to topic from its first offset.
func pushConsumer(t *testing.T, nsAddr, topic string, a *arrivals) {
	t.Helper()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName(unique("CGtimer")),
		consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, a.consume))
	require.NoError(t, pc.Start())
	t.Cleanup(func() { pc.Shutdown() })
}

// lateInSecond waits until the wall clock is three quarters through a
// second: a delay set then ends there too, so the slot's rounding (down,
// delivered at the slot's end) makes it a quarter second late, leaving the
// rest of the second to a loaded machine.
func lateInSecond() {
	ms := time.Now().UnixMilli() % 1000
	time.Sleep(time.Duration((1750-ms)%1000) * time.Millisecond)
}

// timerMsg is a message with a timer property, keys, a tag and a user
// property.
func timerMsg(topic, body, name, value string) *primitive.Message {
	m := primitive.NewMessage(topic, []byte(body))
	m.WithTag("TagT")
	m.WithKeys([]string{"key-" + body})
	m.WithProperty("user", "u-"+body)
	m.WithProperty(name, value)
	return m
}

// checkTimely checks that body arrived once, not before due and within 1 s
// after it, with its id, keys, tag and user property. byStore takes the
// time it was stored in its topic rather than when the consumer got it
// (a consumer started late). up, if given, is the latest it could be due.
func checkTimely(t *testing.T, a *arrivals, body string, due time.Time, msgID string, byStore bool, up ...time.Time) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	at := a.at[body]
	require.Len(t, a.off[body], 1, "%s is stored %d times", body, len(a.off[body])) // the client may hand it over twice
	require.NotEmpty(t, at)
	if byStore {
		at[0] = time.UnixMilli(a.msg[body].StoreTimestamp)
	}
	late := at[0].Sub(due)
	require.GreaterOrEqual(t, late, time.Duration(0), "%s arrived %v before its time", body, -late)
	from := due
	if len(up) > 0 && up[0].After(due) {
		from = up[0] // the broker was down at its time, or got it late
	}
	stored := time.UnixMilli(a.msg[body].StoreTimestamp).Sub(due)
	require.Less(t, at[0].Sub(from), time.Second, "%s arrived %v after its time (%v after %v), stored %v after it",
		body, late, at[0].Sub(from), from, stored)
	m := a.msg[body]
	require.Equal(t, msgID, m.MsgId)
	require.Equal(t, "key-"+body, m.GetKeys())
	require.Equal(t, "TagT", m.GetTags())
	require.Equal(t, "u-"+body, m.GetProperty("user"))
	require.NotEmpty(t, m.GetProperty("TIMER_OUT_MS"))
	require.NotEmpty(t, m.GetProperty("TIMER_ENQUEUE_MS"))
	require.NotEmpty(t, m.GetProperty("TIMER_DEQUEUE_MS"))
	require.Empty(t, m.GetProperty("REAL_TOPIC"))
	t.Logf("%s arrived %v after its time, stored %v after it", body, late.Round(time.Millisecond), stored)
}

func TestE2E_TimerMessages(t *testing.T) {
	delays := []time.Duration{3 * time.Second}
	if *long {
		delays = append(delays, 65*time.Second)
	}
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("TimerTopic")
	sendN(t, p, topic, "warm", 1, nil) // makes the topic
	a := newArrivals()
	s.waitRoute(topic) // the consumer's Start fails on a topic the name server does not know yet
	pushConsumer(t, s.nsAddr, topic, a)
	a.waitAll(t, []string{"warm-0"}, 20*time.Second)

	type sent struct {
		body string
		due  time.Time
		// latest is the latest time it can be due: for a relative delay,
		// counted from when the send returned (the broker counts from
		// when it got it).
		latest time.Time
		id     string
	}
	var all []sent
	for _, d := range delays {
		lateInSecond()
		now := time.Now()
		due := now.Add(d)
		abs := strconv.FormatInt(due.UnixMilli(), 10)
		for _, k := range []struct {
			name, value string
			relative    bool
		}{
			{"TIMER_DELIVER_MS", abs, false},
			{"__STARTDELIVERTIME", abs, false},
			{"TIMER_DELAY_SEC", strconv.Itoa(int(d / time.Second)), true},
			{"TIMER_DELAY_MS", strconv.FormatInt(d.Milliseconds(), 10), true},
		} {
			body := fmt.Sprintf("%s-%v", k.name, d)
			before := time.Now()
			res, err := p.SendSync(context.Background(), timerMsg(topic, body, k.name, k.value))
			require.NoError(t, err)
			require.Equal(t, primitive.SendOK, res.Status)
			m := sent{body: body, due: due, latest: due, id: res.MsgID}
			if k.relative {
				m.due, m.latest = before.Add(d), time.Now().Add(d)
			} else if now := time.Now(); now.After(due) {
				m.latest = now // the broker got it only after its time
			}
			all = append(all, m)
		}
	}
	var bodies []string
	for _, m := range all {
		bodies = append(bodies, m.body)
	}
	a.waitAll(t, bodies, delays[len(delays)-1]+10*time.Second)
	for _, m := range all {
		checkTimely(t, a, m.body, m.due, m.id, false, m.latest)
	}
}

func TestE2E_TimerBeyondMaxDelayIsRefused(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("TimerTopic")
	sendN(t, p, topic, "warm", 1, nil)
	_, err := p.SendSync(context.Background(), timerMsg(topic, "far", "TIMER_DELAY_SEC", strconv.Itoa(3*24*3600+60)))
	require.Error(t, err)
	require.Contains(t, err.Error(), "timer message illegal")
	require.Contains(t, err.Error(), strconv.Itoa(int(remoting.MessageIllegal)))
}

func TestE2E_TimerPendingAcrossCleanRestart(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("TimerTopic")
	sendN(t, p, topic, "warm", 1, nil)
	lateInSecond()
	due := time.Now().Add(4 * time.Second)
	res, err := p.SendSync(context.Background(), timerMsg(topic, "restart", "TIMER_DELIVER_MS", strconv.FormatInt(due.UnixMilli(), 10)))
	require.NoError(t, err)
	s.restartBroker()
	up := time.Now()
	a := newArrivals()
	pushConsumer(t, s.nsAddr, topic, a)
	a.waitAll(t, []string{"restart"}, 30*time.Second)
	// Due while the broker was down (a slow machine), it goes at once
	// after the restart; else at its time.
	checkTimely(t, a, "restart", due, res.MsgID, true, up)
}

// brokerChild is cmd/broker as a child process, on fixed ports and store
// folder, so it can be killed and started again.
type brokerChild struct {
	bin, dir     string
	nsAddr, addr string
	cmd          *exec.Cmd
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func newBrokerChild(t *testing.T) *brokerChild {
	t.Helper()
	dir := t.TempDir()
	b := &brokerChild{bin: buildBroker(t), dir: filepath.Join(dir, "store"), nsAddr: freeAddr(t), addr: freeAddr(t)}
	t.Cleanup(func() {
		if b.cmd != nil {
			b.cmd.Process.Kill()
			b.cmd.Wait()
		}
	})
	return b
}

// buildBroker builds cmd/broker into a temp folder and returns its path.
func buildBroker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "broker")
	build := exec.Command("go", "build", "-o", bin, "github.com/rocketstore/rocketstore/cmd/broker")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the broker: %s", out)
	return bin
}

func (b *brokerChild) start(t *testing.T) {
	t.Helper()
	b.cmd = exec.Command(b.bin, "-namesrv.listen", b.nsAddr, "-listen", b.addr, "-store.dir", b.dir)
	if testing.Verbose() {
		b.cmd.Stderr = os.Stderr
	}
	require.NoError(t, b.cmd.Start())
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, b.nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
		return err == nil && resp.Code == remoting.Success
	}, 30*time.Second, 50*time.Millisecond, "the broker process did not come up")
}

func (b *brokerChild) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
	b.cmd.Wait()
	b.cmd = nil
}

// TestE2E_TimerPendingAcrossSIGKILL kills the broker process while some
// timers are delivered and others pending; after a restart each arrives
// once.
func TestE2E_TimerPendingAcrossSIGKILL(t *testing.T) {
	b := newBrokerChild(t)
	b.start(t)
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{b.nsAddr}), producer.WithGroupName(unique("PG")),
		producer.WithInstanceName(unique("pi")), producer.WithRetry(2))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()
	topic := unique("TimerTopic")
	_, err = p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("warm")))
	require.NoError(t, err)

	lateInSecond()
	start := time.Now()
	var bodies []string
	ids := map[string]string{}
	dues := map[string]time.Time{}
	for i := range 6 { // due 1 s apart, from 2 s on
		body := "kill-" + strconv.Itoa(i)
		due := start.Add(time.Duration(2+i) * time.Second)
		res, err := p.SendSync(context.Background(), timerMsg(topic, body, "TIMER_DELIVER_MS", strconv.FormatInt(due.UnixMilli(), 10)))
		require.NoError(t, err)
		bodies, ids[body], dues[body] = append(bodies, body), res.MsgID, due
	}
	time.Sleep(time.Until(start.Add(3500 * time.Millisecond))) // kill with two delivered and four pending
	b.kill(t)
	b.start(t)
	a := newArrivals()
	pushConsumer(t, b.nsAddr, topic, a)
	a.waitAll(t, bodies, 30*time.Second)
	// Everything due is in the queue by now: a fresh group reads it all
	// from the first offset; give a duplicate a moment to show.
	time.Sleep(time.Until(start.Add(9 * time.Second)))
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, body := range bodies {
		// The client may hand a message over twice (at-least-once); the
		// store must hold it once.
		require.Len(t, a.off[body], 1, "%s is stored %d times: %v", body, len(a.off[body]), a.all[body])
		m := a.msg[body]
		require.Equal(t, ids[body], m.MsgId)
		deq, err := strconv.ParseInt(m.GetProperty("TIMER_DEQUEUE_MS"), 10, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, deq, dues[body].UnixMilli(), "%s delivered before its time", body)
	}
}
