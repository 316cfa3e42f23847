package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// asyncWindow bounds the publishes (and sends) in flight for the async rows,
// on both sides.
const asyncWindow = 1000

// natsOptions is a JetStream server on a random loopback port storing under
// dir; syncAlways makes it fsync every write (sync_interval: always).
func natsOptions(dir string, syncAlways bool) *server.Options {
	return &server.Options{
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		SyncAlways: syncAlways,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
}

func startNATS(dir string, syncAlways bool) (*server.Server, error) {
	ns, err := server.NewServer(natsOptions(dir, syncAlways))
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("nats-server did not come up in 20 s")
	}
	return ns, nil
}

// natsClient is a connection and its JetStream context.
type natsClient struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func connectNATS(url string, opts ...nats.Option) (*natsClient, error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(asyncWindow))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsClient{nc: nc, js: js}, nil
}

func connectAll(n int, url string, opts ...nats.Option) ([]*natsClient, func(), error) {
	var cs []*natsClient
	closeAll := func() {
		for _, c := range cs {
			c.nc.Close()
		}
	}
	for range n {
		c, err := connectNATS(url, opts...)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	return cs, closeAll, nil
}

var streamSeq atomic.Int64

// newStream creates a file-backed stream with one subject, and returns the
// subject and a func deleting the stream.
func newStream(js jetstream.JetStream) (jetstream.Stream, string, func(), error) {
	n := streamSeq.Add(1)
	name, subj := fmt.Sprintf("BENCH%d", n), fmt.Sprintf("bench.%d", n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, "", nil, err
	}
	return st, subj, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		js.DeleteStream(ctx, name)
	}, nil
}

// publishRows runs one publishing row against the clients: mode "async"
// (PublishAsync, then wait for every ack; the clock includes the wait),
// "ack" (Publish: each waits for its ack).
func publishRow(c *config, server int, clients []*natsClient, mode string, size int) (sample, error) {
	_, subj, drop, err := newStream(clients[0].js)
	if err != nil {
		return sample{}, err
	}
	defer drop()
	body := make([]byte, size)
	ctx := context.Background()
	var smp sample
	switch mode {
	case "async":
		smp, err = drive(c, server, len(clients), false, func(w int) (func() error, error) {
			js := clients[w].js
			return func() error {
				_, err := js.PublishAsync(subj, body, stallWait)
				return err
			}, nil
		}, func() error {
			for _, cl := range clients {
				select {
				case <-cl.js.PublishAsyncComplete():
				case <-time.After(time.Minute):
					return errors.New("async publishes not acknowledged within a minute")
				}
			}
			return nil
		})
	case "ack":
		smp, err = drive(c, server, len(clients), true, func(w int) (func() error, error) {
			js := clients[w].js
			return func() error {
				_, err := js.Publish(ctx, subj, body)
				return err
			}, nil
		}, nil)
	default:
		panic(mode)
	}
	smp.bytes = smp.ops * float64(size)
	return smp, err
}

// natsStoreSuite is the store rows on JetStream with file storage, the
// server embedded in this process and nats.go connected in-process.
func natsStoreSuite(c *config, r *results) error {
	for _, always := range []bool{false, true} {
		dir := filepath.Join(c.dir, "nats-store")
		ns, err := startNATS(dir, always)
		if err != nil {
			return err
		}
		err = natsStoreRows(c, r, ns, always)
		ns.Shutdown()
		ns.WaitForShutdown()
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
	}
	return nil
}

func natsStoreRows(c *config, r *results, ns *server.Server, always bool) error {
	clients, closeAll, err := connectAll(64, ns.ClientURL(), nats.InProcessServer(ns))
	if err != nil {
		return err
	}
	defer closeAll()
	if always {
		for _, n := range []int{1, 16, 64} {
			smp, err := publishRow(c, 0, clients[:n], "ack", 1024)
			if err != nil {
				return err
			}
			r.add(row{id: fmt.Sprintf("nats.always.p%d", n), group: group2, system: "NATS JetStream",
				label: fmt.Sprintf("Publish 1KiB, sync_interval: always, %d publisher(s)", n)}, smp)
		}
		return nil
	}
	for _, size := range []int{128, 1024} {
		for _, n := range []int{1, 16} {
			smp, err := publishRow(c, 0, clients[:n], "async", size)
			if err != nil {
				return err
			}
			r.add(row{id: fmt.Sprintf("nats.async.%s.p%d", sizeName(size), n), group: group2, system: "NATS JetStream",
				label: fmt.Sprintf("PublishAsync %s, %d publisher(s), wait for all acks", sizeName(size), n)}, smp)
		}
	}
	for _, n := range []int{1, 16} {
		smp, err := publishRow(c, 0, clients[:n], "ack", 1024)
		if err != nil {
			return err
		}
		r.add(row{id: fmt.Sprintf("nats.ack.p%d", n), group: group2, system: "NATS JetStream",
			label: fmt.Sprintf("Publish 1KiB (waits for the ack), %d publisher(s)", n)}, smp)
	}
	return fetchRow(c, r, clients[0])
}

// fetchRow reads 32-message batches from a pull consumer (AckNone) on a
// stream of c.getFill 1 KiB messages, starting over with a new consumer
// at the end of the stream.
func fetchRow(c *config, r *results, cl *natsClient) error {
	st, subj, drop, err := newStream(cl.js)
	if err != nil {
		return err
	}
	defer drop()
	body := make([]byte, 1024)
	for range c.getFill {
		if _, err := cl.js.PublishAsync(subj, body, stallWait); err != nil {
			return err
		}
	}
	select {
	case <-cl.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return errors.New("backlog not acknowledged within a minute")
	}
	ctx := context.Background()
	var cons jetstream.Consumer
	read := c.getFill
	var bytes int
	smp, err := drive(c, 0, 1, true, func(int) (func() error, error) {
		return func() error {
			if read+32 > c.getFill {
				if cons != nil {
					st.DeleteConsumer(ctx, cons.CachedInfo().Name)
				}
				fresh, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
				if err != nil {
					return err
				}
				cons = fresh
				read = 0
			}
			b, err := cons.Fetch(32, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				return err
			}
			n := 0
			for m := range b.Messages() {
				bytes += len(m.Data())
				n++
			}
			if n != 32 {
				return fmt.Errorf("fetch: %d messages, %v", n, b.Error())
			}
			read += 32
			return nil
		}, nil
	}, nil)
	if err != nil {
		return err
	}
	smp.ops *= 32
	smp.bytes = float64(bytes)
	r.add(row{id: "nats.fetch32", group: group2, system: "NATS JetStream", label: "pull consumer Fetch(32), AckNone, 1KiB (latency per batch)"}, smp)
	return nil
}

// serveNATS is the child process of the broker rows: a JetStream server
// that prints its client URL on stdout and runs until SIGINT or SIGTERM.
func serveNATS(args []string) error {
	fs := flag.NewFlagSet("serve-nats", flag.ContinueOnError)
	dir := fs.String("dir", "", "store directory")
	always := fs.Bool("sync-always", false, "sync_interval: always")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, err := startNATS(*dir, *always)
	if err != nil {
		return err
	}
	fmt.Println(ns.ClientURL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}

// natsProcess is this program re-run as serve-nats, so that the server's
// CPU time can be read on its own.
type natsProcess struct {
	*child
	url string
}

func startNATSProcess(dir string, always bool) (*natsProcess, error) {
	args := []string{"serve-nats", "-dir", dir}
	if always {
		args = append(args, "-sync-always")
	}
	ch, url, err := startSelf("nats-server process", args...)
	if err != nil {
		return nil, err
	}
	return &natsProcess{child: ch, url: url}, nil
}

// startSelf runs this program again with args, as a server child that
// prints its address on its first line of stdout, and returns that line.
func startSelf(what string, args ...string) (*child, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	ch, err := startChild(cmd)
	if err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		ch.stop()
		return nil, "", fmt.Errorf("%s: %w (exit: %v)", what, err, ch.waitErr)
	}
	return ch, strings.TrimSpace(line), nil
}

// stallWait lets PublishAsync wait for a free slot in its window instead of
// failing after the default 200 ms, which a busy 2-core machine can exceed.
var stallWait = jetstream.WithStallWait(time.Minute)
