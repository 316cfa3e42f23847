package remoting

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// idleConns is how many idle connections TestServer_TenThousandIdleConnections holds.
const idleConns = 10_000

// idleClientsEnv makes the test binary the client process of that test:
// "addr,count".
const idleClientsEnv = "REMOTING_IDLE_CLIENTS"

func TestMain(m *testing.M) {
	if spec := os.Getenv(idleClientsEnv); spec != "" {
		os.Exit(runIdleClients(spec))
	}
	os.Exit(m.Run())
}

// raiseFileLimit raises the soft limit on open files to the hard limit
// and returns it.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// runIdleClients is the client process: it opens count connections to
// addr, sends one HEART_BEAT on each and reads its answer, prints "ready",
// and holds them until its stdin closes.
func runIdleClients(spec string) int {
	addr, n, _ := strings.Cut(spec, ",")
	count, err := strconv.Atoi(n)
	if err != nil {
		fmt.Println("bad spec", spec)
		return 2
	}
	if _, err := raiseFileLimit(); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	hb, err := NewRequest(HeartBeat, nil, []byte(`{"clientID":"127.0.0.1@idle","producerDataSet":[],"consumerDataSet":[]}`)).AppendFrame(nil)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	conns := make([]net.Conn, 0, count)
	for i := range count {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			fmt.Printf("dial %d: %v\n", i, err)
			return 1
		}
		nc.SetDeadline(time.Now().Add(time.Minute))
		if _, err := nc.Write(hb); err != nil {
			fmt.Printf("heartbeat %d: %v\n", i, err)
			return 1
		}
		if _, err := NewFrameReader(bufio.NewReaderSize(nc, 512), 0).ReadCommand(); err != nil {
			fmt.Printf("heartbeat answer %d: %v\n", i, err)
			return 1
		}
		conns = append(conns, nc)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, nc := range conns {
		nc.Close()
	}
	return 0
}

// TestServer_TenThousandIdleConnections: 10,000 connections, each having
// sent one heartbeat, are held at once (their clients run in a child
// process, so that each process needs only one descriptor per
// connection); the test reports the server's memory per connection.
func TestServer_TenThousandIdleConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 connections")
	}
	limit, err := raiseFileLimit()
	require.NoError(t, err)
	if limit < idleConns+200 {
		t.Skipf("the hard limit on open files is %d; %d connections need more", limit, idleConns)
	}
	checkNoLeaks(t)
	s := newServer(t, Options{})
	s.RegisterInline(HeartBeat, ProcessorFunc(func(context.Context, *Request) *Command { return NewResponse(Success, "") }))
	addr := startServer(t, s)
	heap0, rss0 := heapInUse(), rssAnon(t)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), idleClientsEnv+"="+addr+","+strconv.Itoa(idleConns))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(waitTimeout):
			cmd.Process.Kill()
			<-exited
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	select {
	case line := <-lines:
		require.Equal(t, "ready", line, "the client process")
	case err := <-exited:
		t.Fatalf("the client process exited: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the client process did not open its connections in 2 minutes")
	}
	require.Equal(t, idleConns, s.ConnCount())
	heap, rss := heapInUse(), rssAnon(t)
	var gs runtime.MemStats
	runtime.ReadMemStats(&gs)
	t.Logf("%d idle connections: heap in use %+.1f MiB (%.1f KiB each), RssAnon %+.1f MiB (%.1f KiB each), stacks in use %.1f MiB",
		idleConns, float64(heap-heap0)/(1<<20), float64(heap-heap0)/idleConns/1024,
		float64(rss-rss0)/(1<<20), float64(rss-rss0)/idleConns/1024, float64(gs.StackInuse)/(1<<20))
	// Every connection is still served.
	cl := newClient(t, Options{})
	_, err = cl.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
}
