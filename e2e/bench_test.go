package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

	"github.com/rocketstore/rocketstore/server/remoting"
)

// brokerProcess is cmd/broker run as a child process (with its embedded
// name server), so its CPU time can be read on its own.
type brokerProcess struct {
	cmd    *exec.Cmd
	nsAddr string
}

func freePort(b testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startBrokerProcess(b testing.TB, args ...string) *brokerProcess {
	b.Helper()
	dir := b.TempDir()
	bin := os.Getenv("ROCKETSTORE_BROKER_BIN") // a prebuilt broker, to compare builds
	if bin == "" {
		bin = filepath.Join(dir, "broker")
		build := exec.Command("go", "build", "-o", bin, "github.com/rocketstore/rocketstore/cmd/broker")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building the broker: %v\n%s", err, out)
		}
	}
	ns := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	if prof := os.Getenv("ROCKETSTORE_BROKER_CPUPROFILE"); prof != "" {
		args = append(args, "-cpuprofile", prof)
	}
	cmd := exec.Command(bin, append([]string{"-namesrv.listen", ns, "-listen", fmt.Sprintf("127.0.0.1:%d", freePort(b)),
		"-store.dir", filepath.Join(dir, "store")}, args...)...)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr // the broker's log
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &brokerProcess{cmd: cmd, nsAddr: ns}
	b.Cleanup(func() { stopChild(cmd) })
	c, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.Invoke(ctx, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			return p
		}
		if time.Now().After(deadline) {
			b.Fatal("the broker process did not come up")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopChild interrupts a child process and waits for it to end, killing
// it after 30 s.
func stopChild(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// cpu is the broker process's user+system CPU time so far.
func (p *brokerProcess) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100
}

// selfCPU is this process's user+system CPU time so far: the clients'.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchProducers(b *testing.B, nsAddr string, n int) []rocketmq.Producer {
	var ps []rocketmq.Producer
	for range n {
		p, err := rocketmq.NewProducer(producer.WithNameServer([]string{nsAddr}), producer.WithGroupName(unique("BPG")),
			producer.WithInstanceName(unique("bpi")), producer.WithRetry(2))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Shutdown() })
		ps = append(ps, p)
	}
	return ps
}

func percentile(d []time.Duration, q float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*q))]
}

// BenchmarkBrokerSend: producers with the official Go client sending 1 KiB
// messages with SendSync to cmd/broker (async flush) on loopback.
func BenchmarkBrokerSend(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("producers=%d/size=1KiB", n), func(b *testing.B) {
			bp := startBrokerProcess(b)
			topic := unique("BenchSend")
			ps := benchProducers(b, bp.nsAddr, n)
			body := make([]byte, 1024)
			for _, p := range ps { // routes and connections
				if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([][]time.Duration, n)
			b.SetBytes(int64(len(body)))
			cpu0, client0 := bp.cpu(b), selfCPU()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i, p := range ps {
				count := b.N / n
				if i < b.N%n {
					count++
				}
				wg.Go(func() {
					for range count {
						t0 := time.Now()
						if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
							b.Error(err)
							return
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			cpu, client := bp.cpu(b)-cpu0, selfCPU()-client0
			all := slices.Concat(lat...)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(percentile(all, 0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(percentile(all, 0.99).Microseconds()), "p99-µs")
			b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "broker-cpu-s/Mmsg")
			// The producers share the machine with the broker: on 2 cores,
			// their CPU per message bounds the rate as much as the broker's.
			b.ReportMetric(client.Seconds()*1e6/float64(b.N), "client-cpu-s/Mmsg")
		})
	}
}

// BenchmarkBrokerConsume: a push consumer draining a backlog of b.N 1 KiB
// messages from cmd/broker.
func BenchmarkBrokerConsume(b *testing.B) {
	bp := startBrokerProcess(b)
	topic := unique("BenchConsume")
	ps := benchProducers(b, bp.nsAddr, 8)
	body := make([]byte, 1024)
	var wg sync.WaitGroup
	for i, p := range ps {
		count := b.N / len(ps)
		if i < b.N%len(ps) {
			count++
		}
		wg.Go(func() {
			for range count {
				if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var got atomic.Int64
	done := make(chan struct{})
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{bp.nsAddr}), consumer.WithGroupName(unique("BCG")),
		consumer.WithInstance(unique("bci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if got.Add(int64(len(msgs))) >= int64(b.N) {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	cpu0 := bp.cpu(b)
	b.ResetTimer()
	start := time.Now()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	defer c.Shutdown()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("consumed %d of %d", got.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric((bp.cpu(b)-cpu0).Seconds()*1e6/float64(b.N), "broker-cpu-s/Mmsg")
}
