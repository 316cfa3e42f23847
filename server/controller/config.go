package controller

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Peer is one controller of the Raft group: its id and its peer address,
// where both Raft and the controller's requests are served.
type Peer struct {
	ID   string
	Addr string
}

// Config is the controller's configuration, in Apache's mqcontroller /
// namesrv keys (ControllerConfig).
type Config struct {
	// Group is controllerDLegerGroup.
	Group string
	// Peers is controllerDLegerPeers (n0-host:port;n1-host:port;…).
	Peers []Peer
	// SelfID is controllerDLegerSelfId.
	SelfID string
	// StorePath is controllerStorePath: the Raft log, stable store and
	// snapshots.
	StorePath string
	// EnableElectUncleanMaster may elect a replica outside the
	// SyncStateSet when none of it lives (loses data).
	EnableElectUncleanMaster bool
	// NotifyBrokerRoleChanged pushes NOTIFY_BROKER_ROLE_CHANGED to the
	// live members after an election.
	NotifyBrokerRoleChanged bool
	// ScanNotActiveBrokerInterval is how often heartbeats are expired.
	ScanNotActiveBrokerInterval time.Duration
	// ScanInactiveMasterInterval is how often the leader looks for groups
	// whose master is dead while a member lives.
	ScanInactiveMasterInterval time.Duration
	// ElectMasterMaxRetryCount bounds a controller-triggered election's
	// retries.
	ElectMasterMaxRetryCount int
	// RaftHeartbeatTimeout and RaftElectionTimeout are hashicorp/raft's
	// timings (1 s each by default; keys raftHeartbeatTimeoutMillis,
	// raftElectionTimeoutMillis, ours).
	RaftHeartbeatTimeout time.Duration
	RaftElectionTimeout  time.Duration
	// SnapshotThreshold is how many log entries lead to a snapshot
	// (raftSnapshotThreshold, ours; 8192 by default).
	SnapshotThreshold uint64
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		Group:                       "DefaultControllerGroup",
		NotifyBrokerRoleChanged:     true,
		ScanNotActiveBrokerInterval: 5 * time.Second,
		ScanInactiveMasterInterval:  5 * time.Second,
		ElectMasterMaxRetryCount:    3,
		RaftHeartbeatTimeout:        time.Second,
		RaftElectionTimeout:         time.Second,
		SnapshotThreshold:           8192,
	}
}

// ParsePeers reads controllerDLegerPeers: id-host:port entries separated
// by ';'.
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	for _, e := range strings.Split(s, ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		id, addr, ok := strings.Cut(e, "-")
		if !ok || id == "" || addr == "" || !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("controllerDLegerPeers: %q is not id-host:port", e)
		}
		if slices.ContainsFunc(out, func(p Peer) bool { return p.ID == id }) {
			return nil, fmt.Errorf("controllerDLegerPeers: id %q twice", id)
		}
		out = append(out, Peer{ID: id, Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("controllerDLegerPeers: no peer")
	}
	return out, nil
}

// FormatPeers writes peers as controllerDLegerPeers does.
func FormatPeers(ps []Peer) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.ID + "-" + p.Addr
	}
	return strings.Join(parts, ";")
}

// SelfAddr is this controller's peer address.
func (c *Config) SelfAddr() string {
	for _, p := range c.Peers {
		if p.ID == c.SelfID {
			return p.Addr
		}
	}
	return ""
}

// Validate checks that the keys a controller needs are set.
func (c *Config) Validate() error {
	if len(c.Peers) == 0 {
		return fmt.Errorf("controller: controllerDLegerPeers is not set")
	}
	if c.SelfAddr() == "" {
		return fmt.Errorf("controller: controllerDLegerSelfId %q is not one of controllerDLegerPeers", c.SelfID)
	}
	if c.StorePath == "" {
		return fmt.Errorf("controller: controllerStorePath is not set")
	}
	return nil
}

// Apply sets the keys of props that the controller knows; it returns the
// keys it does not know (others' keys in a shared file, such as the name
// server's listenPort).
func (c *Config) Apply(props map[string]string) (unknown []string, err error) {
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		var e error
		switch k {
		case "controllerDLegerGroup":
			c.Group = v
		case "controllerDLegerPeers":
			c.Peers, e = ParsePeers(v)
		case "controllerDLegerSelfId":
			c.SelfID = v
		case "controllerStorePath":
			c.StorePath = v
		case "enableElectUncleanMaster":
			c.EnableElectUncleanMaster, e = strconv.ParseBool(v)
		case "notifyBrokerRoleChanged":
			c.NotifyBrokerRoleChanged, e = strconv.ParseBool(v)
		case "scanNotActiveBrokerInterval":
			c.ScanNotActiveBrokerInterval, e = millis(v)
		case "scanInactiveMasterInterval":
			c.ScanInactiveMasterInterval, e = millis(v)
		case "electMasterMaxRetryCount":
			c.ElectMasterMaxRetryCount, e = strconv.Atoi(v)
		case "raftHeartbeatTimeoutMillis":
			c.RaftHeartbeatTimeout, e = millis(v)
		case "raftElectionTimeoutMillis":
			c.RaftElectionTimeout, e = millis(v)
		case "raftSnapshotThreshold":
			c.SnapshotThreshold, e = strconv.ParseUint(v, 10, 64)
		case "controllerType":
			if v != "DLedger" && v != "jRaft" {
				e = fmt.Errorf("unknown controller type")
			}
		default:
			unknown = append(unknown, k)
		}
		if e != nil {
			return unknown, fmt.Errorf("controller: %s=%q: %w", k, v, e)
		}
	}
	return unknown, nil
}

// Properties returns the configuration in its keys, as
// GET_CONTROLLER_CONFIG answers it.
func (c *Config) Properties() map[string]string {
	return map[string]string{
		"controllerDLegerGroup":       c.Group,
		"controllerDLegerPeers":       FormatPeers(c.Peers),
		"controllerDLegerSelfId":      c.SelfID,
		"controllerStorePath":         c.StorePath,
		"enableElectUncleanMaster":    strconv.FormatBool(c.EnableElectUncleanMaster),
		"notifyBrokerRoleChanged":     strconv.FormatBool(c.NotifyBrokerRoleChanged),
		"scanNotActiveBrokerInterval": strconv.FormatInt(c.ScanNotActiveBrokerInterval.Milliseconds(), 10),
		"scanInactiveMasterInterval":  strconv.FormatInt(c.ScanInactiveMasterInterval.Milliseconds(), 10),
		"electMasterMaxRetryCount":    strconv.Itoa(c.ElectMasterMaxRetryCount),
		"raftHeartbeatTimeoutMillis":  strconv.FormatInt(c.RaftHeartbeatTimeout.Milliseconds(), 10),
		"raftElectionTimeoutMillis":   strconv.FormatInt(c.RaftElectionTimeout.Milliseconds(), 10),
		"raftSnapshotThreshold":       strconv.FormatUint(c.SnapshotThreshold, 10),
	}
}

func millis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("must be positive")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// ReadProperties reads a java.util.Properties text (key=value or
// key:value lines, # and ! comments), as the -c files are written.
func ReadProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d %q is not key=value", n, line)
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out, sc.Err()
}

// FormatProperties writes props as properties text, keys sorted.
func FormatProperties(props map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k + "=" + props[k] + "\n")
	}
	return b.String()
}
