package main

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const group1 = "1. Physical limits"

// physicalSuite measures what the hardware allows: copying records into a
// warm mapping (with and without the body CRC the CommitLog computes), disk
// bandwidth, and the latency of a small write made durable.
func physicalSuite(c *config, r *results) error {
	for _, size := range []int{128, 1024} {
		for _, withCRC := range []bool{false, true} {
			s, err := memmoveRow(c, size, withCRC)
			if err != nil {
				return err
			}
			name, label := fmt.Sprintf("ceil.memmove.%s", sizeName(size)), fmt.Sprintf("memmove %s records into a warm mmap", sizeName(size))
			if withCRC {
				name, label = name+".crc", label+" + CRC32"
			}
			r.add(row{id: name, group: group1, system: "ceiling", label: label, unit: "records"}, s)
		}
	}
	s, err := directWriteRow(c)
	if err != nil {
		return err
	}
	r.add(row{id: "ceil.disk.direct", group: group1, system: "ceiling", label: "sequential write, O_DIRECT, 1 MiB writes", unit: "MiB writes"}, s)
	s, err = periodicSyncRow(c)
	if err != nil {
		return err
	}
	r.add(row{id: "ceil.disk.fdatasync", group: group1, system: "ceiling", label: "sequential write, 1 MiB buffered writes, fdatasync every 64 MiB", unit: "MiB writes"}, s)
	s, err = syncLatencyRow(c)
	if err != nil {
		return err
	}
	r.add(row{id: "ceil.fdatasync4k", group: group1, system: "ceiling", label: "4 KiB pwrite + fdatasync (preallocated file)", unit: "syncs"}, s)
	return nil
}

func sizeName(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// memmoveRow copies size-byte records one after another into a 256 MiB
// shared file mapping whose pages were all touched first, wrapping around.
func memmoveRow(c *config, size int, withCRC bool) (sample, error) {
	const mapSize = 256 << 20
	name := filepath.Join(c.dir, "memmove")
	f, err := os.Create(name)
	if err != nil {
		return sample{}, err
	}
	defer os.Remove(name)
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, mapSize); err != nil {
		return sample{}, fmt.Errorf("fallocate %s: %w", name, err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, mapSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return sample{}, err
	}
	defer syscall.Munmap(mem)
	for i := 0; i < mapSize; i += 4096 {
		mem[i] = 0
	}
	rec := make([]byte, size)
	for i := range rec {
		rec[i] = byte(i)
	}
	var sum uint32
	off := 0
	n := 0
	settle(c)
	start := time.Now()
	deadline := start.Add(c.dur)
	for {
		for range 1024 {
			if off+size > mapSize {
				off = 0
			}
			if withCRC {
				sum ^= crc32.ChecksumIEEE(rec)
			}
			copy(mem[off:off+size], rec)
			off += size
		}
		n += 1024
		if time.Now().After(deadline) {
			break
		}
	}
	secs := time.Since(start).Seconds()
	_ = sum
	return sample{ops: float64(n), bytes: float64(n * size), secs: secs, cpu: -1}, nil
}

// alignedBuf is n bytes aligned to a page, as O_DIRECT needs.
func alignedBuf(n int) ([]byte, func(), error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b, func() { syscall.Munmap(b) }, nil
}

// directWriteRow writes 1 MiB blocks with O_DIRECT for c.dur, then
// fdatasyncs once (the clock includes it).
func directWriteRow(c *config) (sample, error) {
	name := filepath.Join(c.dir, "direct")
	fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_DIRECT, 0o644)
	if err != nil {
		return sample{}, fmt.Errorf("open %s with O_DIRECT: %w", name, err)
	}
	defer os.Remove(name)
	defer syscall.Close(fd)
	buf, free, err := alignedBuf(1 << 20)
	if err != nil {
		return sample{}, err
	}
	defer free()
	return writeLoop(c, fd, buf, 0)
}

// periodicSyncRow writes 1 MiB blocks through the page cache and
// fdatasyncs every 64 MiB and at the end, as an async-flush store's
// background flush does.
func periodicSyncRow(c *config) (sample, error) {
	name := filepath.Join(c.dir, "buffered")
	fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC, 0o644)
	if err != nil {
		return sample{}, err
	}
	defer os.Remove(name)
	defer syscall.Close(fd)
	buf, free, err := alignedBuf(1 << 20)
	if err != nil {
		return sample{}, err
	}
	defer free()
	return writeLoop(c, fd, buf, 64)
}

func writeLoop(c *config, fd int, buf []byte, syncEvery int) (sample, error) {
	settle(c)
	n := 0
	start := time.Now()
	deadline := start.Add(c.dur)
	for time.Now().Before(deadline) {
		if _, err := syscall.Write(fd, buf); err != nil {
			return sample{}, err
		}
		n++
		if syncEvery > 0 && n%syncEvery == 0 {
			if err := syscall.Fdatasync(fd); err != nil {
				return sample{}, err
			}
		}
	}
	if err := syscall.Fdatasync(fd); err != nil {
		return sample{}, err
	}
	return sample{ops: float64(n), bytes: float64(n * len(buf)), secs: time.Since(start).Seconds(), cpu: -1}, nil
}

// syncLatencyRow overwrites 4 KiB blocks of a 64 MiB file written and
// synced beforehand (so no metadata changes), one fdatasync per block.
func syncLatencyRow(c *config) (sample, error) {
	const fileSize = 64 << 20
	name := filepath.Join(c.dir, "fdatasync")
	fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_RDWR|syscall.O_TRUNC, 0o644)
	if err != nil {
		return sample{}, err
	}
	defer os.Remove(name)
	defer syscall.Close(fd)
	buf, free, err := alignedBuf(1 << 20)
	if err != nil {
		return sample{}, err
	}
	defer free()
	for off := 0; off < fileSize; off += len(buf) {
		if _, err := syscall.Pwrite(fd, buf, int64(off)); err != nil {
			return sample{}, err
		}
	}
	if err := syscall.Fsync(fd); err != nil {
		return sample{}, err
	}
	block := buf[:4096]
	off := int64(0)
	s, err := drive(c, 0, 1, true, func(int) (func() error, error) {
		return func() error {
			if _, err := syscall.Pwrite(fd, block, off); err != nil {
				return err
			}
			off = (off + 4096) % fileSize
			return syscall.Fdatasync(fd)
		}, nil
	}, nil)
	s.bytes = s.ops * 4096
	return s, err
}

// settle writes back every dirty page on the machine (sync(2)) and waits,
// up to c.settleMax, until less than 32 MiB is dirty or under writeback, so that
// a row does not pay for the write-back of the rows before it (or of a
// server's start-up). Every row of both systems starts this way.
func settle(c *config) {
	syscall.Sync()
	deadline := time.Now().Add(c.settleMax)
	for time.Now().Before(deadline) && dirtyBytes() > 32<<20 {
		time.Sleep(20 * time.Millisecond)
	}
}

// quietServer waits, up to twice c.settleMax, until the server process pid
// uses under 5% of a core over a quarter of a second: a broker row must not
// pay for the start-up work of a server (rocketstore faults in its first
// CommitLog files in the background) or for the rows before it.
func quietServer(c *config, pid int) {
	const window = 250 * time.Millisecond
	deadline := time.Now().Add(2 * c.settleMax)
	for time.Now().Before(deadline) {
		before := processCPU(pid)
		time.Sleep(window)
		if processCPU(pid)-before < 0.05*window.Seconds() {
			return
		}
	}
}

// dirtyBytes is Dirty + Writeback from /proc/meminfo; 0 if unreadable.
func dirtyBytes() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "Dirty:" || f[0] == "Writeback:") {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}
