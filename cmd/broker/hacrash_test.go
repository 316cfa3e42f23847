package main

import (
	"bytes"
	"context"
	"flag"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

var long = flag.Bool("long", false, "run the replication crash campaign with many more kill points")

const (
	crashTopic     = "HACrash"
	crashQueues    = 4
	crashFileSize  = 1 << 20 // mappedFileSizeCommitLog: many roll-overs
	crashProducers = 3
)

// crashBody is the body of message i of the campaign: its number, padded
// to a size that varies with it.
func crashBody(i int64) []byte {
	name := "m-" + strconv.FormatInt(i, 10) + ";"
	return bytes.Repeat([]byte(name), 1+int(i%61))
}

func crashKey(i int64) string { return "K-" + strconv.FormatInt(i, 10) }

// ackedSend is a send the master answered SUCCESS: on a SYNC_MASTER, the
// slave had it then.
type ackedSend struct {
	i       int64
	queueID int32
	offset  int64 // queue offset
	phys    int64 // CommitLog offset, from the offset message id
	life    int   // the master's life it was answered in: kills before it
}

// crashProducer sends over the remoting protocol (SEND_MESSAGE_V2, as the
// RocketMQ clients do) to addr until stop is closed; every send the master
// acknowledges is recorded in acked, every answer's code counted.
type crashProducer struct {
	addr  string
	next  atomic.Int64
	mu    sync.Mutex // guards acked and codes
	acked []ackedSend
	codes map[int]int
	errs  atomic.Int64 // sends without an answer (the master killed or down)
	// life counts the master's deaths seen: an answer read after the k-th
	// is from the master's life k or (read late) k-1, never later.
	life atomic.Int64
}

func (p *crashProducer) ackCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

func (p *crashProducer) run(t *testing.T, stop <-chan struct{}) {
	c, err := remoting.NewClient(remoting.Options{DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		i := p.next.Add(1)
		qid := int32(i % crashQueues)
		props := message.AppendProperty(nil, message.PropertyKeys, crashKey(i))
		req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{
			"a": "PG", "b": crashTopic, "c": "TBW102", "d": strconv.Itoa(crashQueues), "e": strconv.Itoa(int(qid)),
			"f": "0", "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": string(props),
		}, crashBody(i))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.Invoke(ctx, p.addr, req)
		cancel()
		if err != nil {
			p.errs.Add(1)
			select { // the master is down: try again in a moment
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		p.codes[resp.Code]++
		if resp.Code == remoting.Success {
			off, err1 := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
			_, phys, err2 := message.ParseOffsetMsgID(resp.Ext("msgId"))
			if err1 != nil || err2 != nil || resp.Ext("queueId") != strconv.Itoa(int(qid)) {
				t.Errorf("send %d: a SUCCESS answer with bad fields %v", i, resp.ExtFields)
			}
			p.acked = append(p.acked, ackedSend{i: i, queueID: qid, offset: off, phys: phys, life: int(p.life.Load())})
		}
		p.mu.Unlock()
	}
}

func writeConf(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// TestBinary_SyncMasterKilled_EveryAckIsOnTheSlave runs a SYNC_MASTER and
// its SLAVE as two broker processes on loopback, with producers sending to
// the master all along, and kills the master with SIGKILL at random moments
// (restarting it on the same store each time); at the end it stops both
// and reads the slave's store: every send the master acknowledged must be
// there, with its bytes, at its queue offset and CommitLog offset, and the
// slave's CommitLog must be a prefix of the master's.
func TestBinary_SyncMasterKilled_EveryAckIsOnTheSlave(t *testing.T) {
	kills := 10
	if *long {
		kills = 100
	}
	dir := t.TempDir()
	nsAddr, masterAddr, slaveAddr, haAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	_, haPort, err := net.SplitHostPort(haAddr)
	require.NoError(t, err)
	common := "brokerClusterName=CrashCluster\nbrokerName=crash-ha\nmappedFileSizeCommitLog=" + strconv.Itoa(crashFileSize) + "\n"
	masterConf := writeConf(t, dir, "master.conf", common+"brokerId=0\nbrokerRole=SYNC_MASTER\nhaListenPort="+haPort+"\n")
	slaveConf := writeConf(t, dir, "slave.conf", common+"brokerId=1\nbrokerRole=SLAVE\nhaMasterAddress="+haAddr+
		"\nhaReconnectInterval=100\n")
	masterDir, slaveDir := filepath.Join(dir, "master"), filepath.Join(dir, "slave")

	// The slave runs the name server (it outlives the master's deaths).
	slave := startBrokerProc(t, "-c", slaveConf, "-namesrv.listen", nsAddr, "-listen", slaveAddr, "-store.dir", slaveDir)
	slave.waitLine(t, "msg=ready", 30*time.Second)
	startMaster := func() *brokerProc {
		p := startBrokerProc(t, "-c", masterConf, "-n", nsAddr, "-listen", masterAddr, "-store.dir", masterDir)
		p.waitLine(t, "msg=ready", 30*time.Second)
		return p
	}
	master := startMaster()

	prod := &crashProducer{addr: masterAddr, codes: map[int]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range crashProducers {
		wg.Go(func() { prod.run(t, stop) })
	}
	stopped := false
	stopProducers := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopProducers()

	// waitAcks waits until the master acknowledged n more sends: its slave
	// is connected and in sync.
	waitAcks := func(n int) {
		t.Helper()
		base := prod.ackCount()
		require.Eventually(t, func() bool { return prod.ackCount() >= base+n }, 60*time.Second, 5*time.Millisecond,
			"the master acknowledged no sends (codes so far %v)", prod.codes)
	}
	// slaveOffsetAfter is the end of the slave's CommitLog when it first
	// connects to a master after the moment at (since the slave started):
	// it reports that before a new master sends it anything, so it is
	// what the slave had when the master before died.
	slaveOffsetAfter := func(at time.Duration) int64 {
		t.Helper()
		for {
			line, when := slave.waitLine(t, "ha: connected to master", 60*time.Second)
			if when < at {
				continue // an earlier connection
			}
			off, ok := logValue(line, "offset")
			require.True(t, ok, "no offset in %q", line)
			n, err := strconv.ParseInt(off, 10, 64)
			require.NoError(t, err, line)
			return n
		}
	}
	slaveOffsetAfter(0) // the first master's connection
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	start := time.Now()
	var atKill []int64 // the slave's CommitLog end when the master died, by life
	for k := range kills {
		waitAcks(10 + rng.IntN(50))
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond) // a random moment under load
		require.NoError(t, master.cmd.Process.Signal(syscall.SIGKILL), "kill %d", k)
		<-master.exited
		prod.life.Add(1)
		died := time.Since(slave.started)
		master = startMaster()
		atKill = append(atKill, slaveOffsetAfter(died))
	}
	waitAcks(20)
	stopProducers()
	took := time.Since(start)
	for _, p := range []*brokerProc{master, slave} {
		p.terminate(t)
	}

	opts := store.Options{CommitLogFileSize: crashFileSize, Replica: true}
	ss, err := store.Open(slaveDir, opts)
	require.NoError(t, err)
	defer ss.Close()
	missing, late := 0, 0
	for _, a := range prod.acked {
		end, ok := ackedOnSlave(t, ss, a)
		switch {
		case !ok:
			missing++
		case a.life < len(atKill) && end > atKill[a.life]:
			// Acknowledged, but the slave did not have it when this
			// master died: it came later, from the next master.
			t.Errorf("acked send %d (CommitLog %d..%d) was not on the slave when the master died: the slave had %d",
				a.i, a.phys, end, atKill[a.life])
			late++
		}
	}
	t.Logf("%d SIGKILLs of the SYNC_MASTER in %v: %d sends acknowledged, %d missing on the slave, %d not on it when the master died; answers %v, %d sends unanswered; slave CommitLog %d bytes",
		kills, took.Round(time.Millisecond), len(prod.acked), missing, late, prod.codes, prod.errs.Load(), ss.MaxPhyOffset())
	require.Zero(t, missing, "acknowledged sends missing on the slave")
	require.Zero(t, late, "acknowledged sends the slave did not have at the master's death")
	require.Greater(t, len(prod.acked), kills*10)

	mopts := opts
	mopts.Replica = false
	ms, err := store.Open(masterDir, mopts)
	require.NoError(t, err)
	defer ms.Close()
	requirePrefix(t, ms, ss)
}

// ackedOnSlave reports whether the acknowledged send a is in s, its record
// at its queue offset and at its CommitLog offset, with its body and key,
// and where its record ends.
func ackedOnSlave(t *testing.T, s *store.MessageStore, a ackedSend) (int64, bool) {
	t.Helper()
	r := s.GetMessage("check", crashTopic, a.queueID, a.offset, 1, nil)
	defer r.Release()
	if r.Status != store.Found || len(r.Messages) != 1 {
		t.Errorf("acked send %d (queue %d offset %d, CommitLog %d): %v on the slave", a.i, a.queueID, a.offset, a.phys, r.Status)
		return 0, false
	}
	rec, err := message.Parse(r.Messages[0].Bytes())
	if err != nil || rec.CheckCRC() != nil {
		t.Errorf("acked send %d: a bad record on the slave: %v", a.i, err)
		return 0, false
	}
	keys, _ := message.LookupProperty(string(rec.Properties()), message.PropertyKeys)
	if !bytes.Equal(rec.Body(), crashBody(a.i)) || keys != crashKey(a.i) || rec.PhysicalOffset() != a.phys {
		t.Errorf("acked send %d: the slave has another record at queue %d offset %d (keys %q, CommitLog %d, want %d)",
			a.i, a.queueID, a.offset, keys, rec.PhysicalOffset(), a.phys)
		return 0, false
	}
	return a.phys + int64(rec.TotalSize()), true
}

// logValue finds key=value in a log line of slog's text handler.
func logValue(line, key string) (string, bool) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// requirePrefix checks that the slave's CommitLog holds the same bytes as
// the master's, from the slave's start to its end.
func requirePrefix(t *testing.T, master, slave *store.MessageStore) {
	t.Helper()
	mcl, scl := master.CommitLog(), slave.CommitLog()
	require.LessOrEqual(t, scl.MaxOffset(), mcl.MaxOffset(), "the slave has more than the master")
	for off := max(scl.MinOffset(), 0); off < scl.MaxOffset(); {
		a, err := scl.ReadFrom(off, 1<<20)
		require.NoError(t, err)
		b, err := mcl.ReadFrom(off, len(a.Bytes()))
		require.NoError(t, err)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("the CommitLogs differ in the %d bytes at %d", len(a.Bytes()), off)
		}
		off += int64(len(a.Bytes()))
		a.Release()
		b.Release()
	}
}
