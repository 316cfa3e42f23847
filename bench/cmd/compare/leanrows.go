package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rocketstore/rocketstore/bench/lean"
)

// leanRows drives the broker at addr (process pid) with the lean load
// generator: pipelined SEND_MESSAGE_V2 with asyncWindow in flight, then a
// pull consumer draining a backlog it filled. Their other number is this
// process's CPU (the generator's) per million messages.
func leanRows(c *config, r *results, addr string, pid int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	body := make([]byte, 1024)
	topic := unique("BenchLean")
	if _, err := lean.Send(ctx, lean.SendOptions{Addr: addr, Topic: topic, Body: body, Count: 1000}); err != nil {
		return fmt.Errorf("lean producer warm-up: %w", err)
	}
	settle(c)
	quietServer(c, pid)
	cpu0, self0 := processCPU(pid), processCPU(os.Getpid())
	res, err := lean.Send(ctx, lean.SendOptions{Addr: addr, Topic: topic, Body: body, Duration: c.dur, InFlight: asyncWindow})
	if err != nil {
		return fmt.Errorf("lean producer: %w", err)
	}
	n := float64(res.Messages)
	r.add(row{id: "rs.lean.async", group: group3, system: "rocketstore", extraName: clientCPU,
		label: fmt.Sprintf("lean producer: SEND_MESSAGE_V2 1KiB pipelined, async flush, 1 connection, %d in flight", asyncWindow)},
		sample{ops: n, bytes: n * 1024, secs: res.Elapsed.Seconds(), cpu: processCPU(pid) - cpu0,
			extra: (processCPU(os.Getpid()) - self0) / n * 1e6})

	// The same with the ROCKETMQ binary header (answered in kind): what
	// the JSON header costs the broker.
	settle(c)
	quietServer(c, pid)
	cpu0, self0 = processCPU(pid), processCPU(os.Getpid())
	res, err = lean.Send(ctx, lean.SendOptions{Addr: addr, Topic: topic, Body: body, Duration: c.dur, InFlight: asyncWindow, RocketMQHeader: true})
	if err != nil {
		return fmt.Errorf("lean producer, ROCKETMQ header: %w", err)
	}
	n = float64(res.Messages)
	r.add(row{id: "rs.lean.async.rmq", group: group3, system: "rocketstore", extraName: clientCPU,
		label: fmt.Sprintf("the same lean producer with the ROCKETMQ binary header, %d in flight", asyncWindow)},
		sample{ops: n, bytes: n * 1024, secs: res.Elapsed.Seconds(), cpu: processCPU(pid) - cpu0,
			extra: (processCPU(os.Getpid()) - self0) / n * 1e6})

	topic = unique("BenchLeanDrain")
	if _, err := lean.Send(ctx, lean.SendOptions{Addr: addr, Topic: topic, Body: body, Count: c.backlog, InFlight: asyncWindow}); err != nil {
		return fmt.Errorf("lean backlog: %w", err)
	}
	settle(c)
	quietServer(c, pid)
	cpu0, self0 = processCPU(pid), processCPU(os.Getpid())
	res, err = lean.Drain(ctx, lean.DrainOptions{Addr: addr, Topic: topic, Group: unique("LeanCG"), Want: int64(c.backlog)})
	if err != nil {
		return fmt.Errorf("lean consumer: %w", err)
	}
	n = float64(res.Messages)
	r.add(row{id: "rs.lean.drain", group: group3, system: "rocketstore", extraName: clientCPU,
		label: fmt.Sprintf("lean pull consumer (PULL_MESSAGE, 32 per pull, one pull per queue) draining a backlog of %d x 1KiB", c.backlog)},
		sample{ops: n, bytes: n * 1024, secs: res.Elapsed.Seconds(), cpu: processCPU(pid) - cpu0,
			extra: (processCPU(os.Getpid()) - self0) / n * 1e6})
	return nil
}

// leanHeapDrainRow is rs.lean.drain against a broker that copies each
// pull's records into one body (transferMsgByHeap=true) instead of writing
// them from the mapping.
func leanHeapDrainRow(c *config, r *results) error {
	dir := filepath.Join(c.dir, "broker-store-heap")
	defer os.RemoveAll(dir)
	bp, err := startBroker(c.broker, dir, false, c.commitLogFileSize, "transferMsgByHeap=true")
	if err != nil {
		return err
	}
	defer bp.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	topic := unique("BenchLeanHeap")
	if _, err := lean.Send(ctx, lean.SendOptions{Addr: bp.addr, Topic: topic, Body: make([]byte, 1024), Count: c.backlog, InFlight: asyncWindow}); err != nil {
		return fmt.Errorf("lean backlog: %w", err)
	}
	pid := bp.pid()
	settle(c)
	quietServer(c, pid)
	cpu0, self0 := processCPU(pid), processCPU(os.Getpid())
	res, err := lean.Drain(ctx, lean.DrainOptions{Addr: bp.addr, Topic: topic, Group: unique("LeanCG"), Want: int64(c.backlog)})
	if err != nil {
		return fmt.Errorf("lean consumer: %w", err)
	}
	n := float64(res.Messages)
	r.add(row{id: "rs.lean.drain.heap", group: group3, system: "rocketstore", extraName: clientCPU,
		label: fmt.Sprintf("the same drain, pulls copied on the heap (transferMsgByHeap=true), backlog of %d x 1KiB", c.backlog)},
		sample{ops: n, bytes: n * 1024, secs: res.Elapsed.Seconds(), cpu: processCPU(pid) - cpu0,
			extra: (processCPU(os.Getpid()) - self0) / n * 1e6})
	return nil
}
