package ha

import (
	"encoding/binary"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

var benchBatch = DefaultTransferBatchSize

// benchStoreOptions: CommitLog files of 128 MiB, so that the 64 MiB the
// benchmark copies go into the file made (and faulted in) at Open, as most
// writes do in a 1 GiB file: a roll-over waits for the next file's
// fallocate and page faults, which the TCP copy never pays.
func benchStoreOptions() store.Options {
	o := storeOptions()
	o.CommitLogFileSize = 128 << 20
	o.ConsumeQueueFileUnits = 300000
	o.IndexHashSlots, o.IndexMaxEntries = 0, 0
	return o
}

func benchMessage(i int, body []byte) *message.Message {
	return &message.Message{
		Topic: testTopic, QueueID: int32(i % testQueues), Body: body,
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:40000"),
	}
}

// fillStore puts 1 KiB messages until the CommitLog holds size bytes.
func fillStore(b *testing.B, st *store.MessageStore, size int64) {
	b.Helper()
	body := make([]byte, 1024)
	for i := 0; st.MaxPhyOffset() < size; i++ {
		if _, err := st.PutMessage(benchMessage(i, body)); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tcpCopy sends cl's bytes over one loopback connection in frames of
// batch bytes, straight from the mapped files, as the master does, to a
// reader that hands what it reads to sink, if not nil, and else drops it:
// the ceiling of replication.
func tcpCopy(b *testing.B, cl *commitlog.Log, batch int, sink func([]byte)) time.Duration {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	total := cl.MaxOffset()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, readBufferSize)
		var got int64
		for got < total {
			n, err := c.Read(buf)
			if err != nil {
				done <- err
				return
			}
			got += int64(n)
			if sink != nil {
				sink(buf[:n])
			}
		}
		done <- nil
	}()
	start := time.Now()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for off := int64(0); off < total; {
		s, err := cl.ReadFrom(off, batch)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(s.Bytes()); err != nil {
			b.Fatal(err)
		}
		off += int64(len(s.Bytes()))
		s.Release()
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkReplication_VsTCPCopy copies a 64 MiB CommitLog to an empty
// slave, and the same bytes over a plain TCP connection, in each
// iteration, and reports both rates and their ratio.
func BenchmarkReplication_VsTCPCopy(b *testing.B) {
	const size = 64 << 20
	ms, err := store.Open(b.TempDir(), benchStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ms.Close()
	fillStore(b, ms, size)
	m, err := NewMaster(ms, "127.0.0.1:0", Options{TransferBatchSize: benchBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	total := ms.MaxPhyOffset()
	var haTime, tcpTime, ceilTime, storeTime, haCPU, tcpCPU, ceilCPU, storeCPU time.Duration
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		ss, err := store.Open(b.TempDir(), benchStoreOptions())
		if err != nil {
			b.Fatal(err)
		}
		ss.CommitLog().WaitAllocated()
		cpu := cpuTime()
		tcpTime += tcpCopy(b, ms.CommitLog(), DefaultTransferBatchSize, nil)
		tcpCPU += cpuTime() - cpu
		sink := newCopySink(b, total)
		cpu = cpuTime()
		ceilTime += tcpCopy(b, ms.CommitLog(), DefaultTransferBatchSize, sink.take)
		ceilCPU += cpuTime() - cpu
		sink.close(b, total)
		stSink := newStoreSink(b)
		cpu = cpuTime()
		storeTime += tcpCopy(b, ms.CommitLog(), DefaultTransferBatchSize, stSink.take)
		storeCPU += cpuTime() - cpu
		stSink.close(b, total)
		b.StartTimer()
		start, cpu := time.Now(), cpuTime()
		sl, err := NewSlave(ss, m.Addr().String(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for ss.ReplicaOffset() < total {
			time.Sleep(100 * time.Microsecond)
		}
		haTime += time.Since(start)
		haCPU += cpuTime() - cpu
		b.StopTimer()
		sl.Close()
		ss.Close()
		b.StartTimer()
	}
	mb := float64(total) * float64(b.N) / (1 << 20)
	b.ReportMetric(mb/haTime.Seconds(), "ha-MB/s")
	b.ReportMetric(mb/tcpTime.Seconds(), "tcp-MB/s")
	b.ReportMetric(tcpTime.Seconds()/haTime.Seconds(), "ha/tcp")
	// CPU time per byte tells less of the load of a shared machine: the
	// CPU the replication (the slave's dispatch included) spends per MB.
	b.ReportMetric(haCPU.Seconds()*1000/mb, "ha-cpu-ms/MB")
	b.ReportMetric(tcpCPU.Seconds()*1000/mb, "tcp-cpu-ms/MB")
	// The TCP copy whose reader also does the part of the slave's work no
	// design avoids (copySink): what replication could reach here.
	b.ReportMetric(mb/ceilTime.Seconds(), "copy+parse-MB/s")
	b.ReportMetric(ceilTime.Seconds()/haTime.Seconds(), "ha/copy+parse")
	b.ReportMetric(ceilCPU.Seconds()*1000/mb, "copy+parse-cpu-ms/MB")
	// The TCP copy whose reader hands what it reads to a store as a slave
	// does (AppendReplica: the CommitLog copy, and the dispatch that builds
	// the ConsumeQueues), without the HA frames and reports: the work the
	// issue asks of a slave, on the same cores.
	b.ReportMetric(mb/storeTime.Seconds(), "tcp+store-MB/s")
	b.ReportMetric(tcpTime.Seconds()/storeTime.Seconds(), "tcp+store/tcp")
	b.ReportMetric(storeTime.Seconds()/haTime.Seconds(), "ha/tcp+store")
	b.ReportMetric(storeCPU.Seconds()*1000/mb, "tcp+store-cpu-ms/MB")
}

// storeSink appends what it is given to an empty store with
// AppendReplica, as a slave appends the master's bytes.
type storeSink struct {
	st  *store.MessageStore
	off int64
	err error
}

func newStoreSink(b *testing.B) *storeSink {
	b.Helper()
	st, err := store.Open(b.TempDir(), benchStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	st.CommitLog().WaitAllocated()
	return &storeSink{st: st}
}

func (s *storeSink) take(p []byte) {
	if s.err == nil {
		s.err = s.st.AppendReplica(s.off, p)
		s.off += int64(len(p))
	}
}

// close checks that every byte went in and closes the store.
func (s *storeSink) close(b *testing.B, size int64) {
	b.Helper()
	if s.err != nil || s.st.ReplicaOffset() != size {
		b.Fatalf("store sink: %d of %d bytes: %v", s.st.ReplicaOffset(), size, s.err)
	}
	if err := s.st.Close(); err != nil {
		b.Fatal(err)
	}
}

// copySink is the least a slave does with the bytes it reads, beyond
// reading them: it copies them into a mapped file, warmed as a slave's
// CommitLog file is, and parses each whole record (its dispatch's parse,
// without the ConsumeQueue writes).
type copySink struct {
	f       *mappedfile.File
	m       []byte
	w, next int // bytes copied; start of the first record not parsed
	records int
}

func newCopySink(b *testing.B, size int64) *copySink {
	b.Helper()
	f, err := mappedfile.Create(filepath.Join(b.TempDir(), mappedfile.FileName(0)), 0, int(size), mappedfile.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Warm(); err != nil {
		b.Fatal(err)
	}
	return &copySink{f: f, m: f.Mapping()}
}

func (c *copySink) take(p []byte) {
	c.w += copy(c.m[c.w:], p)
	for c.w-c.next >= 4 {
		size := int(binary.BigEndian.Uint32(c.m[c.next:]))
		if size <= 0 || c.next+size > c.w {
			return
		}
		if _, err := message.Parse(c.m[c.next : c.next+size]); err != nil {
			return
		}
		c.next += size
		c.records++
	}
}

// close checks that every record came whole and drops the file.
func (c *copySink) close(b *testing.B, size int64) {
	b.Helper()
	if int64(c.next) != size || c.records == 0 {
		b.Fatalf("copy sink parsed %d records up to %d of %d bytes", c.records, c.next, size)
	}
	if err := c.f.Destroy(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPut_SyncVsAsyncMaster puts 1 KiB messages on a master with a
// slave connected, alternating runs as ASYNC_MASTER and SYNC_MASTER, and
// reports each one's p50 and p99 put latency and what sync adds.
func BenchmarkPut_SyncVsAsyncMaster(b *testing.B) {
	ms, err := store.Open(b.TempDir(), benchStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ms.Close()
	ss, err := store.Open(b.TempDir(), benchStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	m, err := NewMaster(ms, "127.0.0.1:0", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	sl, err := NewSlave(ss, m.Addr().String(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sl.Close()
	for m.Slaves() == 0 {
		time.Sleep(time.Millisecond)
	}
	body := make([]byte, 1024)
	const run = 200
	var async, sync []time.Duration
	b.SetBytes(int64(len(body)))
	i := 0
	for b.Loop() {
		if (i/run)%2 == 1 {
			ms.SetReplicaWaiter(m)
		} else {
			ms.SetReplicaWaiter(nil)
		}
		start := time.Now()
		res, err := ms.PutMessage(benchMessage(i, body))
		took := time.Since(start)
		if err != nil || res.Status != store.PutOK {
			b.Fatalf("put: %v %v", res.Status, err)
		}
		if (i/run)%2 == 1 {
			sync = append(sync, took)
		} else {
			async = append(async, took)
		}
		i++
	}
	ms.SetReplicaWaiter(nil)
	if len(sync) == 0 {
		return
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(float64(len(d)-1)*p)].Microseconds())
	}
	b.ReportMetric(pct(async, 0.5), "async-p50-µs")
	b.ReportMetric(pct(async, 0.99), "async-p99-µs")
	b.ReportMetric(pct(sync, 0.5), "sync-p50-µs")
	b.ReportMetric(pct(sync, 0.99), "sync-p99-µs")
	b.ReportMetric(pct(sync, 0.5)-pct(async, 0.5), "added-p50-µs")
}

// BenchmarkLag_1KiBSends puts 1 KiB messages at 20,000 a second (20 MB/s)
// on an ASYNC_MASTER with a slave connected, and reports how far (bytes)
// the slave's CommitLog is behind the master's at each put: the data an
// async master's loss would lose. (Unpaced, one producer puts ~500 MB/s
// on this machine, faster than the slave copies; the lag then grows.)
func BenchmarkLag_1KiBSends(b *testing.B) {
	ms, err := store.Open(b.TempDir(), benchStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ms.Close()
	ss, err := store.Open(b.TempDir(), benchStoreOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	m, err := NewMaster(ms, "127.0.0.1:0", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	sl, err := NewSlave(ss, m.Addr().String(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sl.Close()
	for m.Slaves() == 0 {
		time.Sleep(time.Millisecond)
	}
	body := make([]byte, 1024)
	var lags []int64
	b.SetBytes(int64(len(body)))
	const every = 50 * time.Microsecond
	i := 0
	start := time.Now()
	for b.Loop() {
		for time.Since(start) < time.Duration(i)*every {
			runtime.Gosched()
		}
		if _, err := ms.PutMessage(benchMessage(i, body)); err != nil {
			b.Fatal(err)
		}
		lags = append(lags, ms.MaxPhyOffset()-ss.ReplicaOffset())
		i++
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2]), "lag-p50-B")
	b.ReportMetric(float64(lags[(len(lags)-1)*99/100]), "lag-p99-B")
	b.ReportMetric(float64(lags[len(lags)-1]), "lag-max-B")
}
