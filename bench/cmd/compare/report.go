package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ratioDef is a ratio of two rows, taken within each round.
type ratioDef struct {
	name     string
	num, den string
	metric   string // "rate", "mbps", or "cpu" (den's CPU per message over num's: > 1 means rocketstore uses less)
	kind     string // "NATS JetStream" or "ceiling"
	headline bool
	desc     string
}

var ratioDefs = []ratioDef{
	{"store_put_vs_nats_async", "rs.put.1KiB.w16", "nats.async.1KiB.p16", "rate", "NATS JetStream", true, "store put 1 KiB, 16 writers ÷ JetStream PublishAsync 1 KiB, 16 publishers (msgs/s)"},
	{"store_put1_vs_nats_async1", "rs.put.1KiB.w1", "nats.async.1KiB.p1", "rate", "NATS JetStream", false, "store put 1 KiB, 1 writer ÷ PublishAsync, 1 publisher"},
	{"store_put128_vs_nats_async128", "rs.put.128B.w16", "nats.async.128B.p16", "rate", "NATS JetStream", false, "store put 128 B, 16 writers ÷ PublishAsync 128 B, 16 publishers"},
	{"syncflush1_vs_nats_always1", "rs.sync.w1", "nats.always.p1", "rate", "NATS JetStream", false, "sync-flush put, 1 writer ÷ Publish with sync_interval: always, 1 publisher"},
	{"syncflush16_vs_nats_always", "rs.sync.w16", "nats.always.p16", "rate", "NATS JetStream", true, "sync-flush put, 16 writers ÷ Publish with sync_interval: always, 16 publishers"},
	{"syncflush64_vs_nats_always64", "rs.sync.w64", "nats.always.p64", "rate", "NATS JetStream", false, "sync-flush put, 64 writers ÷ sync_interval: always, 64 publishers"},
	{"get32_vs_nats_fetch32", "rs.get32", "nats.fetch32", "rate", "NATS JetStream", false, "GetMessage 32 ÷ Fetch(32) (msgs/s)"},
	{"broker1_vs_nats_ack1", "rs.broker.send.p1", "nats.server.ack.p1", "rate", "NATS JetStream", false, "broker SendSync, 1 producer ÷ nats-server Publish, 1 publisher"},
	{"broker16_vs_nats_ack16", "rs.broker.send.p16", "nats.server.ack.p16", "rate", "NATS JetStream", true, "broker SendSync, 16 producers ÷ nats-server Publish, 16 publishers"},
	{"null16_vs_nats_ack16", "ceil.goclient.send.p16", "nats.server.ack.p16", "rate", "NATS JetStream", false, "the official Go client's SendSync, 16 producers, to a null broker ÷ nats-server Publish, 16 publishers: the best broker16_vs_nats_ack16 any broker could reach"},
	{"broker16_vs_null16", "rs.broker.send.p16", "ceil.goclient.send.p16", "rate", "ceiling", false, "broker SendSync, 16 producers ÷ the same client to a null broker"},
	{"broker_lean_async_vs_nats_async", "rs.lean.async", "nats.server.async", "rate", "NATS JetStream", true, "lean producer, SEND_MESSAGE_V2 pipelined ÷ nats-server PublishAsync, 1 KiB, 1000 in flight (msgs/s)"},
	{"broker_lean_cpu_vs_nats_async", "rs.lean.async", "nats.server.async", "cpu", "NATS JetStream", true, "server CPU per message, nats-server PublishAsync ÷ broker under the lean producer (> 1: rocketstore uses less)"},
	{"broker_lean_rmq_cpu_vs_nats_async", "rs.lean.async.rmq", "nats.server.async", "cpu", "NATS JetStream", false, "as broker_lean_cpu_vs_nats_async, the lean producer with the ROCKETMQ binary header"},
	{"drain_lean_vs_nats_drain", "rs.lean.drain", "nats.server.drain", "rate", "NATS JetStream", true, "lean pull consumer drain ÷ JetStream consumer drain (msgs/s)"},
	{"drain_zerocopy_vs_heap", "rs.lean.drain", "rs.lean.drain.heap", "rate", "rocketstore", false, "lean drain, pulls written from the mapping ÷ copied on the heap (transferMsgByHeap=true)"},
	{"broker_async_vs_nats_async", "rs.broker.async", "nats.server.async", "rate", "NATS JetStream", false, "broker SendAsync ÷ nats-server PublishAsync"},
	{"broker_sync16_vs_nats_always16", "rs.broker.sync.send.p16", "nats.server.always.ack.p16", "rate", "NATS JetStream", false, "sync-flush broker, 16 producers ÷ nats-server always, 16 publishers"},
	{"drain_vs_nats_drain", "rs.broker.drain", "nats.server.drain", "rate", "NATS JetStream", false, "push consumer drain ÷ JetStream consumer drain"},
	{"broker16_cpu_vs_nats", "rs.broker.send.p16", "nats.server.ack.p16", "cpu", "NATS JetStream", false, "server CPU per message, NATS ÷ rocketstore (> 1: rocketstore uses less)"},
	{"store_put_vs_memmove_crc", "rs.put.1KiB.w1", "ceil.memmove.1KiB.crc", "rate", "ceiling", false, "store put 1 KiB, 1 writer ÷ memmove+CRC32 of 1 KiB records (records/s)"},
	{"store_put128_vs_memmove_crc", "rs.put.128B.w1", "ceil.memmove.128B.crc", "rate", "ceiling", false, "store put 128 B, 1 writer ÷ memmove+CRC32 of 128 B records"},
	{"store_put_vs_disk", "rs.put.1KiB.w16", "ceil.disk.fdatasync", "mbps", "ceiling", false, "store put 1 KiB, 16 writers ÷ buffered writes with periodic fdatasync (MB/s)"},
	{"syncflush1_vs_fdatasync", "rs.sync.w1", "ceil.fdatasync4k", "rate", "ceiling", false, "sync-flush puts/s, 1 writer ÷ 4 KiB write+fdatasync/s"},
	{"syncflush64_vs_direct", "rs.sync.w64", "ceil.disk.direct", "mbps", "ceiling", false, "sync-flush put, 64 writers ÷ O_DIRECT bandwidth (MB/s)"},
}

type ratio struct {
	ratioDef
	val stat
}

func computeRatios(res *results) []ratio {
	var out []ratio
	for _, d := range ratioDefs {
		num, den := res.byID[d.num], res.byID[d.den]
		if num == nil || den == nil {
			continue
		}
		var v []float64
		for i := range min(len(num.samples), len(den.samples)) {
			a, b := num.samples[i], den.samples[i]
			switch d.metric {
			case "rate":
				v = append(v, a.rate()/b.rate())
			case "mbps":
				v = append(v, a.mbps()/b.mbps())
			case "cpu":
				if a.cpu > 0 && b.cpu > 0 {
					v = append(v, b.cpuPerM()/a.cpuPerM())
				}
			}
		}
		if len(v) > 0 {
			out = append(out, ratio{d, statOf(v)})
		}
	}
	return out
}

func fmtRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtDur(d float64) string {
	if d <= 0 {
		return "–"
	}
	t := time.Duration(d)
	switch {
	case t >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(t)/1e6)
	default:
		return fmt.Sprintf("%.1f µs", float64(t)/1e3)
	}
}

func printRows(res *results) {
	for _, x := range res.order {
		rate, mb := x.metric(sample.rate), x.metric(sample.mbps)
		fmt.Printf("row %-28s %10s %s/s ±%4.1f%%  %8.1f MB/s", x.id, fmtRate(rate.med), x.unit, rate.spread(), mb.med)
		if p := x.metric(func(s sample) float64 { return float64(s.p50) }); p.med > 0 {
			fmt.Printf("  p50 %s p99 %s", fmtDur(p.med), fmtDur(x.metric(func(s sample) float64 { return float64(s.p99) }).med))
		}
		if c := x.metric(sample.cpuPerM); c.med > 0 && x.samples[0].cpu >= 0 {
			fmt.Printf("  cpu %.1f s/Mmsg", c.med)
		}
		if x.extraName != "" {
			fmt.Printf("  %.1f %s", x.metric(func(s sample) float64 { return s.extra }).med, x.extraName)
		}
		fmt.Println()
	}
}

func writeReport(out, chart string, m machine, c *config, res *results, ratios []ratio, took time.Duration) error {
	var b strings.Builder
	mode, target := "full", "make bench-compare"
	if c.quick {
		mode, target = "quick", "make bench-compare-quick"
	}
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "rocketstore against the machine's physical limits and against NATS JetStream (nats-server v2.15.2, nats.go v1.55.0), ")
	fmt.Fprintf(&b, "measured side by side in one run by `bench/cmd/compare`. This file was written by `%s`; reproduce with `make bench-compare` (full: 5 rounds, 3 s rows, a backlog of 1,000,000) or `make bench-compare-quick` (under 3 minutes). Both print one `ratio NAME=VALUE` line per ratio at the end, the headline ratios last.\n\n", target)
	fmt.Fprintf(&b, "This run: **%s mode**, %d interleaved rounds (every row once per round, in the same order), %v per throughput row, a drain backlog of %d messages; %s in all, finished %s.\n",
		mode, c.rounds, c.dur, c.backlog, took.Round(time.Second), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	if c.quick {
		b.WriteString("Quick-mode rows are short, so their spread is wide: read the ratios, not the absolute numbers.\n")
	}
	if c.commitLogFileSize > 0 {
		fmt.Fprintf(&b, "rocketstore's CommitLog files are %d MiB in this run (store option `CommitLogFileSize`, broker.conf `mappedFileSizeCommitLog`) instead of the default 1 GiB, so that warming each new file and settling the disk between rows take less time.\n", c.commitLogFileSize>>20)
	}
	b.WriteString("\n## Machine\n\n| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPU | %s |\n| cores | %d (GOMAXPROCS %d) |\n| memory | %s |\n| kernel | %s |\n| disk | %s |\n| Go | %s |\n\n",
		m.cpu, m.cores, m.cores, m.memory, m.kernel, m.disk, m.goVer)
	b.WriteString("## Ratios\n\nEach ratio is taken within a round (both rows ran minutes apart at most, on the same machine), then the median over the rounds; the spread is (max−min)/median of the per-round ratios. Above 1 means rocketstore is faster (or, for CPU, cheaper).\n\n")
	b.WriteString("| ratio | median | spread | what |\n|---|---:|---:|---|\n")
	for _, r := range ratios {
		name := "`" + r.name + "`"
		if r.headline {
			name = "**" + name + "**"
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.0f%% | %s |\n", name, r.val.med, r.val.spread(), r.desc)
	}
	link := chart
	absOut, err1 := filepath.Abs(out)
	absChart, err2 := filepath.Abs(chart)
	if err1 == nil && err2 == nil {
		if l, err := filepath.Rel(filepath.Dir(absOut), absChart); err == nil {
			link = l
		}
	}
	fmt.Fprintf(&b, "\n![ratios](%s)\n\n", filepath.ToSlash(link))
	b.WriteString("## Rows\n\nMedian over the rounds, with the spread ((max−min)/median) of the rate. Latency is per call (per batch for the reads). CPU is user+system seconds per million messages from /proc/<pid>/stat: the server process's alone for the broker rows, the whole process's (client and store together) for the in-process store rows. Other: messages per fsync for the sync-flush store rows; for the broker rows, the clients' CPU (this process) per million messages, since clients and servers share the cores.\n")
	group := ""
	for _, x := range res.order {
		if x.group != group {
			group = x.group
			fmt.Fprintf(&b, "\n### %s\n\n| row | system | rate | spread | MB/s | p50 | p99 | CPU s / M msgs | other |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n", group)
		}
		rate, mb := x.metric(sample.rate), x.metric(sample.mbps)
		p50 := x.metric(func(s sample) float64 { return float64(s.p50) })
		p99 := x.metric(func(s sample) float64 { return float64(s.p99) })
		cpu := "–"
		if x.samples[0].cpu >= 0 {
			cpu = fmt.Sprintf("%.1f", x.metric(sample.cpuPerM).med)
		}
		other := ""
		if x.extraName != "" {
			other = fmt.Sprintf("%.1f %s", x.metric(func(s sample) float64 { return s.extra }).med, x.extraName)
		}
		fmt.Fprintf(&b, "| %s<br>`%s` | %s | %s %s/s | %.0f%% | %.1f | %s | %s | %s | %s |\n",
			x.label, x.id, x.system, fmtRate(rate.med), x.unit, rate.spread(), mb.med, fmtDur(p50.med), fmtDur(p99.med), cpu, other)
	}
	b.WriteString(methodNotes)
	for _, f := range []string{out, chart} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(chart, []byte(svgChart(ratios)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

const methodNotes = `
## Method

- **Physical limits.** memmove: records copied one after another into a 256 MiB shared file mapping whose pages were touched first, with and without ` + "`crc32.ChecksumIEEE`" + ` of the record (the CommitLog's body CRC): the CPU ceiling of an append. Disk: 1 MiB sequential writes with O_DIRECT, and buffered with fdatasync every 64 MiB (the final fdatasync is inside the clock). Sync-flush ceiling: 4 KiB pwrite + fdatasync, one at a time, overwriting a file written and synced beforehand.
- **Store rows** run in this process. rocketstore: ` + "`store.PutMessage`" + ` with messages built as in ` + "`store/bench_test.go`" + ` (tag, key, UNIQ_KEY: about 100 B of properties, indexed); the async rows stop the clock once dispatch (ConsumeQueue and IndexFile) has caught up; sync rows use ` + "`FlushDiskType: SyncFlush`" + ` and report messages per fsync from ` + "`Syncs()`" + `. NATS: an embedded nats-server with JetStream file storage, driven by nats.go connected in-process (` + "`nats.InProcessServer`" + `), one connection per publisher, a new stream per row; async rows use PublishAsync (at most 1000 pending) and the clock includes waiting for every ack; sync rows use a server with ` + "`SyncAlways`" + ` (` + "`sync_interval: always`" + `). NATS bodies carry no headers. The read rows are not like for like: GetMessage hands back slices of the mapped CommitLog (no copy, no protocol), Fetch goes through the client protocol (in-process pipe), so that ratio shows what the in-process API saves.
- **Broker rows** run the servers as child processes on loopback: ` + "`cmd/broker`" + ` (with its embedded name server) driven by the official ` + "`rocketmq-client-go/v2`" + `, one producer instance per producer; this program re-run as ` + "`serve-nats`" + ` (the same embedded nats-server) driven by nats.go over TCP. The broker's CPU includes its embedded name server. Async rows allow 1000 sends in flight on both sides. The lean rows drive the same broker with ` + "`bench/lean`" + `: one connection pipelining SEND_MESSAGE_V2 (JSON header, 1 KiB body, 4 queues, 1000 in flight; the frame is encoded once and written many to a write; rs.lean.async.rmq is the same with the ROCKETMQ binary header, answered in kind), and a pull consumer with PULL_MESSAGE (32 per pull, one pull in flight per queue, 4 queues, one goroutine writing each queue's next pull as its answer is read) draining a backlog the lean producer filled; their client CPU is a few µs per message, so those rows measure the broker. The ceiling rows ceil.goclient.send.p1 and .p16 drive a null broker (this program re-run as serve-null: a remoting server that is its own name server and answers every send at once with SUCCESS, storing nothing) with the same client and producers: what the client and the remoting path alone cost, the most any broker can reach with that client on these cores. The drain fills a topic/stream first, then times a push consumer (from the first offset) against a JetStream consumer with AckNone delivering all, until every message arrived.
- Every row starts from a quiet disk: sync(2), then a wait (at most 10 s, 3 s in quick mode) until under 32 MiB is dirty or under write-back, so that no row pays for the write-back of the rows before it or of a server's start-up (rocketstore warms each new 1 GiB CommitLog file). The broker rows then wait (at most 20 s, 6 s in quick mode) until the server process is quiet (under 5% of a core over 250 ms: a fresh rocketstore broker faults in its first two CommitLog files in the background), and take the server's CPU over the clock alone. A few operations per worker run before the clock starts.
- Peers are used only through their public APIs, with their defaults unless stated.
`

// svgChart draws the ratios as horizontal bars on a log scale around 1,
// with a whisker from the lowest to the highest round.
func svgChart(ratios []ratio) string {
	const (
		left, right, top, rowH, width = 300, 70, 40, 22, 920
	)
	lo, hi := 0.5, 2.0
	for _, r := range ratios {
		lo = math.Min(lo, r.val.min)
		hi = math.Max(hi, r.val.max)
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 1e-4))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	plotW := float64(width - left - right)
	x := func(v float64) float64 {
		v = math.Min(math.Max(v, lo), hi)
		return left + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*plotW
	}
	height := top + rowH*len(ratios) + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">rocketstore ÷ NATS JetStream (green/red) and ÷ physical ceiling (blue), log scale; whiskers: min–max over rounds</text>`+"\n", 10)
	for t := lo; t <= hi*1.001; t *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := t * m
			if v > hi*1.001 {
				break
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), top-5, x(v), height-35)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>`+"\n", x(v), height-20, v)
		}
	}
	for i, r := range ratios {
		y := top + i*rowH
		color := "#4a7bd0"
		if r.kind != "ceiling" {
			color = "#3a9d5d"
			if r.val.med < 1 {
				color = "#d05a4a"
			}
		}
		weight := "normal"
		if r.headline {
			weight = "bold"
		}
		x0, x1 := x(1), x(r.val.med)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-weight="%s">%s</text>`+"\n", left-8, y+14, weight, r.name)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y+3, math.Max(x1-x0, 1), rowH-6, color)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222"/>`+"\n", x(r.val.min), y+rowH/2, x(r.val.max), y+rowH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#222">%.3g</text>`+"\n", math.Max(x(r.val.med), x(r.val.max))+4, y+14, r.val.med)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000" stroke-width="1.5"/>`+"\n", x(1), top-5, x(1), height-35)
	b.WriteString("</svg>\n")
	return b.String()
}
