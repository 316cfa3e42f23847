package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// brokerProc is cmd/broker run as a child process, its log lines fed to
// a channel.
type brokerProc struct {
	cmd     *exec.Cmd
	started time.Time
	lines   chan logLine
	exited  chan struct{}
}

// logLine is a line the broker logged and when it came.
type logLine struct {
	text string
	at   time.Time
}

func startBrokerProc(t *testing.T, args ...string) *brokerProc {
	t.Helper()
	return startBrokerProcEcho(t, testing.Verbose(), args...)
}

// startBrokerProcEcho is startBrokerProc; echo copies the broker's log to
// the test's stderr.
func startBrokerProcEcho(t *testing.T, echo bool, args ...string) *brokerProc {
	t.Helper()
	cmd := exec.Command(brokerBinary(t), args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	p := &brokerProc{cmd: cmd, lines: make(chan logLine, 1024), exited: make(chan struct{})}
	p.started = time.Now()
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if echo {
				fmt.Fprintln(os.Stderr, "broker:", sc.Text())
			}
			select {
			case p.lines <- logLine{sc.Text(), time.Now()}:
			default:
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// waitLine waits for a log line holding s and returns it, and when it
// came after the start.
func (p *brokerProc) waitLine(t *testing.T, s string, timeout time.Duration) (string, time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l.text, s) {
				return l.text, l.at.Sub(p.started)
			}
		case <-p.exited:
			t.Fatalf("the broker exited before logging %q", s)
		case <-deadline:
			t.Fatalf("no %q logged in %v", s, timeout)
		}
	}
}

func sendOne(ctx context.Context, c *remoting.Client, addr, topic string) (*remoting.Command, error) {
	return c.Invoke(ctx, addr, remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
	}, []byte("hello")))
}

// TestBinary_FreshStartIsReadyAtOnce starts the built broker (with its
// embedded name server) on a fresh store while a client asks the name
// server for a route as fast as it can: the first answer it gets is a
// route, and a send to the broker succeeds at once; the broker logs
// "ready" within a second or so (the figure is logged). Then, with a
// consumer's pull held and its connection open, a SIGTERM stops the
// broker in a few seconds, the held pull answered first.
func TestBinary_FreshStartIsReadyAtOnce(t *testing.T) {
	nsAddr, brokerAddr := freeAddr(t), freeAddr(t)
	dir := t.TempDir()
	c, err := remoting.NewClient(remoting.Options{DialTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()

	p := startBrokerProc(t, "-namesrv.listen", nsAddr, "-listen", brokerAddr, "-store.dir", filepath.Join(dir, "store"))
	// Ask for a route from the start; the name server's port opens when the
	// broker is registered, so the first answer must be a route.
	deadline := time.Now().Add(20 * time.Second)
	var routed time.Duration
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.Invoke(ctx, nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
		cancel()
		if err == nil {
			require.Equal(t, remoting.Success, resp.Code, "the name server answered before the broker registered: %s", resp.Remark)
			routed = time.Since(p.started)
			break
		}
		require.True(t, time.Now().Before(deadline), "the name server never answered: %v", err)
		time.Sleep(2 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	resp, err := sendOne(ctx, c, brokerAddr, "FirstTopic")
	cancel()
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	sent := time.Since(p.started)
	line, ready := p.waitLine(t, "msg=ready", 10*time.Second)
	require.Contains(t, line, "broker="+brokerAddr)
	require.Contains(t, line, "namesrv="+nsAddr)
	t.Logf("fresh start: ready logged after %v, first route after %v, first send done after %v", ready, routed, sent)
	// Target 1 s (0.1-0.3 s measured on an idle machine; was 6.6 s); the
	// bound leaves room for a loaded CI machine.
	require.Less(t, ready, 3*time.Second, "a fresh start must be ready at once")

	// A consumer: a pull held, pulling again on every answer.
	var answers atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_, err := c.Invoke(ctx, brokerAddr, remoting.NewRequest(remoting.PullMessage, map[string]string{
				"consumerGroup": "CG", "topic": "FirstTopic", "queueId": "0", "queueOffset": "1",
				"maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "20000",
				"subscription": "*", "subVersion": "0",
			}, nil))
			cancel()
			if err != nil {
				return
			}
			answers.Add(1)
		}
	})
	// Give the pull time to be held: it is answered only at the stop.
	require.Never(t, func() bool { return answers.Load() > 0 }, 300*time.Millisecond, 10*time.Millisecond)

	stopAt := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not stop in 30 s")
	}
	took := time.Since(stopAt)
	t.Logf("SIGTERM with a held pull and a connected client: stopped in %v", took)
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode())
	require.Less(t, took, 10*time.Second, "a stop takes seconds, not the 30 s budget")
	wg.Wait()
	require.GreaterOrEqual(t, answers.Load(), int64(1), "the held pull was answered")
}
