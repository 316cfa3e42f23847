package controller

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// requestNames are upstream's lower-case request type labels.
var requestNames = map[int]string{
	protocol.ControllerAlterSyncStateSet: "controller_alter_sync_state_set",
	protocol.ControllerElectMaster:       "controller_elect_master",
	protocol.ControllerRegisterBroker:    "controller_register_broker",
	protocol.ControllerGetReplicaInfo:    "controller_get_replica_info",
	protocol.ControllerGetMetadataInfo:   "controller_get_metadata_info",
	protocol.ControllerGetSyncStateData:  "controller_get_sync_state_data",
	protocol.UpdateControllerConfig:      "update_controller_config",
	protocol.GetControllerConfig:         "get_controller_config",
	protocol.CleanBrokerData:             "clean_broker_data",
	protocol.ControllerGetNextBrokerID:   "controller_get_next_broker_id",
	protocol.ControllerApplyBrokerID:     "controller_apply_broker_id",
	remoting.BrokerHeartbeat:             "broker_heartbeat",
}

// Election results (upstream's ElectionResult, lower case).
const (
	electedNew  = "new_master_elected"
	electedKeep = "keep_current_master"
	electedNone = "no_master_elected"
)

// counts are the controller's counters, kept without prometheus types so
// that the hot path is one map update under a lock.
type counts struct {
	mu        sync.Mutex
	requests  map[[2]string]uint64 // request type, status
	elections map[string]uint64
}

func (c *counts) request(code, respCode int) {
	status := "success"
	if respCode != remoting.Success {
		status = "failed"
	}
	name := requestNames[code]
	if name == "" {
		name = strconv.Itoa(code)
	}
	c.mu.Lock()
	if c.requests == nil {
		c.requests = map[[2]string]uint64{}
	}
	c.requests[[2]string{name, status}]++
	c.mu.Unlock()
}

func (c *counts) election(result string) {
	c.mu.Lock()
	if c.elections == nil {
		c.elections = map[string]uint64{}
	}
	c.elections[result]++
	c.mu.Unlock()
}

// Collector returns the controller's Prometheus metrics, in upstream's
// names with the rocketmq_ prefix the broker's carry: rocketmq_role (1 on
// the serving leader), rocketmq_active_broker_num, rocketmq_request_total,
// rocketmq_election_total; and per broker group the replicated
// rocketmq_controller_master_epoch and
// rocketmq_controller_sync_state_set_size.
func (c *Controller) Collector() prometheus.Collector { return (*collector)(c) }

type collector Controller

var (
	descRole     = prometheus.NewDesc("rocketmq_role", "Whether this controller is the serving leader (1) or not (0)", []string{"address", "group", "peer_id"}, nil)
	descActive   = prometheus.NewDesc("rocketmq_active_broker_num", "Brokers whose heartbeats this controller receives", []string{"cluster", "broker_set"}, nil)
	descRequests = prometheus.NewDesc("rocketmq_request_total", "Controller requests handled", []string{"request_type", "request_handle_status"}, nil)
	descElection = prometheus.NewDesc("rocketmq_election_total", "Master elections decided by this controller", []string{"election_result"}, nil)
	descEpoch    = prometheus.NewDesc("rocketmq_controller_master_epoch", "Master epoch of a broker group", []string{"cluster", "broker_set"}, nil)
	descSSSize   = prometheus.NewDesc("rocketmq_controller_sync_state_set_size", "Members of a broker group's SyncStateSet", []string{"cluster", "broker_set"}, nil)
)

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRole, descActive, descRequests, descElection, descEpoch, descSSSize} {
		ch <- d
	}
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	c := (*Controller)(k)
	cfg := c.Config()
	role := 0.0
	if c.IsLeader() {
		role = 1
	}
	ch <- prometheus.MustNewConstMetric(descRole, prometheus.GaugeValue, role, cfg.SelfAddr(), cfg.Group, cfg.SelfID)
	active := map[[2]string]int{}
	c.live.mu.Lock()
	for _, b := range c.live.m {
		if c.now().Sub(b.Last) < b.Timeout {
			active[[2]string{b.Cluster, b.BrokerName}]++
		}
	}
	c.live.mu.Unlock()
	for k, n := range active {
		ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	c.counts.mu.Lock()
	for k, n := range c.counts.requests {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	for k, n := range c.counts.elections {
		ch <- prometheus.MustNewConstMetric(descElection, prometheus.CounterValue, float64(n), k)
	}
	c.counts.mu.Unlock()
	for _, g := range c.fsm.groups() {
		ch <- prometheus.MustNewConstMetric(descEpoch, prometheus.GaugeValue, float64(g.MasterEpoch), g.Cluster, g.Name)
		ch <- prometheus.MustNewConstMetric(descSSSize, prometheus.GaugeValue, float64(len(g.SyncStateSet)), g.Cluster, g.Name)
	}
}
