package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rocketstore/rocketstore/server/remoting"
)

const group3 = "3. Broker over loopback TCP"

// clientCPU names the broker rows' other number: this process's CPU (the
// clients') per million messages, as the clients share the cores.
const clientCPU = "s/Mmsg client CPU"

func init() { rlog.SetLogLevel("fatal") }

// buildBroker compiles cmd/broker into dir.
func buildBroker(dir string) (string, error) {
	bin := filepath.Join(dir, "broker")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/rocketstore/rocketstore/cmd/broker")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/broker (run from bench/, or pass -broker): %w\n%s", err, out)
	}
	return bin, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// processCPU is a process's user+system CPU time so far, in seconds.
func processCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(utime+stime) / 100 // USER_HZ
}

// child is a started process and a channel closed when it has exited.
type child struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // set before exited is closed
}

func startChild(cmd *exec.Cmd) (*child, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop interrupts the process and waits up to 30 s before killing it.
func (c *child) stop() error {
	select {
	case <-c.exited:
		return c.waitErr
	default:
	}
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
		return c.waitErr
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
		return errors.New("did not stop within 30 s of SIGINT; killed")
	}
}

// brokerProcess is cmd/broker with its embedded name server.
type brokerProcess struct {
	*child
	nsAddr string
	addr   string // the broker's own listen address
}

// startBroker starts cmd/broker storing under dir; conf lines (RocketMQ's
// broker.conf keys) go to its config file.
func startBroker(bin, dir string, syncFlush bool, fileSize int, conf ...string) (*brokerProcess, error) {
	nsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	bPort, err := freePort()
	if err != nil {
		return nil, err
	}
	ns := fmt.Sprintf("127.0.0.1:%d", nsPort)
	args := []string{"-namesrv.listen", ns, "-listen", fmt.Sprintf("127.0.0.1:%d", bPort), "-store.dir", dir}
	if syncFlush {
		args = append(args, "-syncFlush")
	}
	if fileSize > 0 {
		conf = append(conf, fmt.Sprintf("mappedFileSizeCommitLog=%d", fileSize))
	}
	if len(conf) > 0 {
		name := filepath.Join(filepath.Dir(dir), "broker.conf")
		if err := os.WriteFile(name, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "-c", name)
	}
	cmd := exec.Command(bin, args...)
	logName := filepath.Join(filepath.Dir(dir), "broker.log")
	logFile, err := os.Create(logName)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd.Stderr = logFile
	ch, err := startChild(cmd)
	if err != nil {
		return nil, err
	}
	p := &brokerProcess{child: ch, nsAddr: ns, addr: fmt.Sprintf("127.0.0.1:%d", bPort)}
	c, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		p.stop()
		return nil, err
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.Invoke(ctx, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			return p, nil
		}
		select {
		case <-p.exited:
		case <-time.After(50 * time.Millisecond):
			if time.Now().Before(deadline) {
				continue
			}
			p.stop()
		}
		log, _ := os.ReadFile(logName)
		return nil, fmt.Errorf("the broker process did not register within 30 s (exit: %v); its log:\n%s", p.waitErr, log)
	}
}

var uniq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s%d_%d", prefix, os.Getpid(), uniq.Add(1)) }

func rmqProducers(nsAddr string, n int) ([]rocketmq.Producer, func(), error) {
	var ps []rocketmq.Producer
	closeAll := func() {
		for _, p := range ps {
			p.Shutdown()
		}
	}
	for range n {
		p, err := rocketmq.NewProducer(producer.WithNameServer([]string{nsAddr}), producer.WithGroupName(unique("BPG")),
			producer.WithInstanceName(unique("bpi")), producer.WithRetry(2))
		if err == nil {
			err = p.Start()
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ps = append(ps, p)
	}
	return ps, closeAll, nil
}

// brokerSuite: cmd/broker driven by the official RocketMQ Go client, then a
// nats-server process driven by nats.go, with the same counts and sizes.
func brokerSuite(c *config, r *results) error {
	if err := rmqBrokerRows(c, r, false); err != nil {
		return fmt.Errorf("rocketstore broker, async flush: %w", err)
	}
	if err := nullRows(c, r); err != nil {
		return fmt.Errorf("null broker: %w", err)
	}
	if err := leanHeapDrainRow(c, r); err != nil {
		return fmt.Errorf("rocketstore broker, transferMsgByHeap: %w", err)
	}
	if err := natsServerRows(c, r, false); err != nil {
		return fmt.Errorf("nats-server: %w", err)
	}
	if err := rmqBrokerRows(c, r, true); err != nil {
		return fmt.Errorf("rocketstore broker, sync flush: %w", err)
	}
	if err := natsServerRows(c, r, true); err != nil {
		return fmt.Errorf("nats-server, sync always: %w", err)
	}
	return nil
}

func rmqBrokerRows(c *config, r *results, syncFlush bool) error {
	dir := filepath.Join(c.dir, "broker-store")
	defer os.RemoveAll(dir)
	bp, err := startBroker(c.broker, dir, syncFlush, c.commitLogFileSize)
	if err != nil {
		return err
	}
	defer bp.stop()
	ps, closeAll, err := rmqProducers(bp.nsAddr, 16)
	if err != nil {
		return err
	}
	defer closeAll()
	body := make([]byte, 1024)
	pid := bp.pid()
	flush, idp := "async flush", "rs.broker"
	if syncFlush {
		flush, idp = "sync flush", "rs.broker.sync"
	}
	for _, n := range []int{1, 16} {
		topic := unique("BenchSend")
		for _, p := range ps[:n] { // routes and connections
			if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
				return err
			}
		}
		smp, err := drive(c, pid, n, true, sendSyncOps(ps, topic, body), nil)
		if err != nil {
			return err
		}
		smp.bytes = smp.ops * float64(len(body))
		r.add(row{id: fmt.Sprintf("%s.send.p%d", idp, n), group: group3, system: "rocketstore", extraName: clientCPU,
			label: fmt.Sprintf("SendSync 1KiB, %s, %d producer(s)", flush, n)}, smp)
	}
	if syncFlush {
		return nil
	}
	topic := unique("BenchAsync")
	if _, err := ps[0].SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
		return err
	}
	settle(c)
	quietServer(c, pid)
	cpu0 := processCPU(pid)
	smp, err := rmqAsync(c.dur, 0, ps[0], topic, body)
	if err != nil {
		return err
	}
	smp.extra, smp.cpu = smp.cpuPerM(), processCPU(pid)-cpu0 // the client's, then the server's
	r.add(row{id: "rs.broker.async", group: group3, system: "rocketstore", extraName: clientCPU,
		label: fmt.Sprintf("SendAsync 1KiB, async flush, 1 producer, %d in flight", asyncWindow)}, smp)
	if err := leanRows(c, r, bp.addr, pid); err != nil {
		return err
	}

	// The drain: fill a topic, then time a push consumer reading it all.
	topic = unique("BenchDrain")
	if _, err := ps[0].SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
		return err
	}
	if err := rmqFill(ps, topic, body, c.backlog-1); err != nil {
		return err
	}
	var got atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	cons, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{bp.nsAddr}), consumer.WithGroupName(unique("BCG")),
		consumer.WithInstance(unique("bci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	if err := cons.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if got.Add(int64(len(msgs))) >= int64(c.backlog) {
			once.Do(func() { close(done) })
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		return err
	}
	settle(c)
	quietServer(c, pid)
	cpu0, self0 := processCPU(pid), processCPU(os.Getpid())
	start := time.Now()
	if err := cons.Start(); err != nil {
		return err
	}
	defer cons.Shutdown()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("push consumer: %d of %d in 10 minutes", got.Load(), c.backlog)
	}
	n := float64(c.backlog)
	r.add(row{id: "rs.broker.drain", group: group3, system: "rocketstore", extraName: clientCPU,
		label: fmt.Sprintf("push consumer draining a backlog of %d x 1KiB", c.backlog)},
		sample{ops: n, bytes: n * 1024, secs: time.Since(start).Seconds(), cpu: processCPU(pid) - cpu0,
			extra: (processCPU(os.Getpid()) - self0) / n * 1e6})
	return nil
}

// rmqFill sends count messages to topic in batches of 32 (SendSync with
// several messages: one batch request), from every producer at once.
func rmqFill(ps []rocketmq.Producer, topic string, body []byte, count int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(ps))
	for i, p := range ps {
		n := count / len(ps)
		if i < count%len(ps) {
			n++
		}
		wg.Go(func() {
			for n > 0 {
				batch := make([]*primitive.Message, min(32, n))
				for j := range batch {
					batch[j] = primitive.NewMessage(topic, body)
				}
				res, err := p.SendSync(context.Background(), batch...)
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("batch send: status %v", res.Status)
				}
				if err != nil {
					errs[i] = err
					return
				}
				n -= len(batch)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sendSyncOps makes drive's ops: worker w sends body to topic with
// SendSync on ps[w], and fails unless the status is SEND_OK.
func sendSyncOps(ps []rocketmq.Producer, topic string, body []byte) func(w int) (func() error, error) {
	return func(w int) (func() error, error) {
		p := ps[w]
		return func() error {
			res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body))
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("send: status %v", res.Status)
			}
			return err
		}, nil
	}
}

// rmqAsync sends with SendAsync, at most asyncWindow in flight, for d (or,
// when d is 0, count messages) and waits for every callback.
func rmqAsync(d time.Duration, count int, p rocketmq.Producer, topic string, body []byte) (sample, error) {
	window := make(chan struct{}, asyncWindow)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	self0 := processCPU(os.Getpid())
	start := time.Now()
	deadline := start.Add(d)
	n := 0
	for (d > 0 && time.Now().Before(deadline)) || (d == 0 && n < count) {
		if failed.Load() != nil {
			break
		}
		window <- struct{}{}
		wg.Add(1)
		err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("async send: status %v", res.Status)
			}
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			<-window
			wg.Done()
		}, primitive.NewMessage(topic, body))
		if err != nil {
			return sample{}, err
		}
		n++
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return sample{}, *e
	}
	return sample{ops: float64(n), bytes: float64(n * len(body)), secs: time.Since(start).Seconds(), cpu: processCPU(os.Getpid()) - self0}, nil
}

func natsServerRows(c *config, r *results, always bool) error {
	dir := filepath.Join(c.dir, "nats-broker")
	defer os.RemoveAll(dir)
	np, err := startNATSProcess(dir, always)
	if err != nil {
		return err
	}
	defer np.stop()
	clients, closeAll, err := connectAll(16, np.url)
	if err != nil {
		return err
	}
	defer closeAll()
	pid := np.pid()
	flush, idp := "default sync_interval (2 min)", "nats.server"
	if always {
		flush, idp = "sync_interval: always", "nats.server.always"
	}
	for _, n := range []int{1, 16} {
		smp, err := publishRow(c, pid, clients[:n], "ack", 1024)
		if err != nil {
			return err
		}
		r.add(row{id: fmt.Sprintf("%s.ack.p%d", idp, n), group: group3, system: "NATS JetStream", extraName: clientCPU,
			label: fmt.Sprintf("Publish 1KiB (waits for the ack), %s, %d publisher(s)", flush, n)}, smp)
	}
	if always {
		return nil
	}
	smp, err := publishRow(c, pid, clients[:1], "async", 1024)
	if err != nil {
		return err
	}
	r.add(row{id: "nats.server.async", group: group3, system: "NATS JetStream", extraName: clientCPU,
		label: fmt.Sprintf("PublishAsync 1KiB, 1 publisher, %d in flight", asyncWindow)}, smp)
	return natsDrain(c, r, clients, pid)
}

// natsDrain fills a stream with c.backlog messages, then times a consumer
// (AckNone, deliver all) pushing them all to a Consume callback.
func natsDrain(c *config, r *results, clients []*natsClient, pid int) error {
	st, subj, drop, err := newStream(clients[0].js)
	if err != nil {
		return err
	}
	defer drop()
	body := make([]byte, 1024)
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, cl := range clients { // fill from every connection at once
		n := c.backlog / len(clients)
		if i < c.backlog%len(clients) {
			n++
		}
		wg.Go(func() {
			for range n {
				if _, err := cl.js.PublishAsync(subj, body, stallWait); err != nil {
					errs[i] = err
					return
				}
			}
			select {
			case <-cl.js.PublishAsyncComplete():
			case <-time.After(10 * time.Minute):
				errs[i] = errors.New("backlog not acknowledged within 10 minutes")
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ctx := context.Background()
	var got atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	settle(c)
	quietServer(c, pid)
	cpu0, self0 := processCPU(pid), processCPU(os.Getpid())
	start := time.Now()
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(jetstream.Msg) {
		if got.Add(1) >= int64(c.backlog) {
			once.Do(func() { close(done) })
		}
	})
	if err != nil {
		return err
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("consumer: %d of %d in 10 minutes", got.Load(), c.backlog)
	}
	n := float64(c.backlog)
	r.add(row{id: "nats.server.drain", group: group3, system: "NATS JetStream", extraName: clientCPU,
		label: fmt.Sprintf("consumer (AckNone) draining a backlog of %d x 1KiB", c.backlog)},
		sample{ops: n, bytes: n * 1024, secs: time.Since(start).Seconds(), cpu: processCPU(pid) - cpu0,
			extra: (processCPU(os.Getpid()) - self0) / n * 1e6})
	return nil
}
