package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// machine says where the numbers come from.
type machine struct {
	cpu    string
	cores  int
	kernel string
	memory string
	disk   string
	goVer  string
}

var fsTypes = map[int64]string{
	0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs",
	0x794C7630: "overlayfs", 0x2FC12FC1: "zfs", 0x6969: "nfs", 0xF2F52010: "f2fs",
}

func describeMachine(dir string) machine {
	m := machine{cpu: "unknown", cores: runtime.NumCPU(), kernel: "unknown", goVer: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		info := map[string]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() && sc.Text() != "" { // the first processor is enough
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
				info[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		f.Close()
		if v := info["model name"]; v != "" {
			m.cpu = v
		}
		if info["cpu family"] != "" {
			m.cpu += fmt.Sprintf(" (family %s, model %s, stepping %s, %s MHz)", info["cpu family"], info["model"], info["stepping"], info["cpu MHz"])
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			if f := strings.Fields(line); len(f) >= 2 {
				var kb float64
				fmt.Sscan(f[1], &kb)
				m.memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		fsType := fsTypes[int64(st.Type)]
		if fsType == "" {
			fsType = fmt.Sprintf("fs type 0x%x", st.Type)
		}
		size := float64(st.Blocks) * float64(st.Bsize) / (1 << 30)
		free := float64(st.Bavail) * float64(st.Bsize) / (1 << 30)
		dev, mnt := mountOf(dir)
		m.disk = fmt.Sprintf("%s on %s (%s, %.0f GiB, %.0f GiB free)%s", dev, mnt, fsType, size, free, blockInfo(dev))
	}
	return m
}

// mountOf finds the mount holding dir in /proc/self/mountinfo.
func mountOf(dir string) (dev, mnt string) {
	abs, _ := filepath.Abs(dir)
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "?", "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 2 {
			continue
		}
		p := a[4]
		if (abs == p || strings.HasPrefix(abs, strings.TrimSuffix(p, "/")+"/")) && len(p) >= len(mnt) {
			dev, mnt = b[1], p
		}
	}
	return dev, mnt
}

// blockInfo is what /sys says about a block device: rotational, model.
func blockInfo(dev string) string {
	name := filepath.Base(dev)
	sys := filepath.Join("/sys/class/block", name)
	if _, err := os.Stat(sys); err != nil {
		return ""
	}
	var parts []string
	if b, err := os.ReadFile(filepath.Join(sys, "queue/rotational")); err == nil {
		if strings.TrimSpace(string(b)) == "1" {
			parts = append(parts, "rotational")
		} else {
			parts = append(parts, "non-rotational")
		}
	}
	if b, err := os.ReadFile(filepath.Join(sys, "device/model")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		parts = append(parts, strings.TrimSpace(string(b)))
	}
	if b, err := os.ReadFile(filepath.Join(sys, "queue/scheduler")); err == nil {
		parts = append(parts, "scheduler "+strings.TrimSpace(string(b)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}
