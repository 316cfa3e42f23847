package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// Replica is one broker of a group as the controller knows it.
type Replica struct {
	// Addr is the broker's remoting address.
	Addr string `json:"addr"`
	// CheckCode is the register check code it applied for its id with
	// ("addr;millis"): the same id claimed with another code is refused.
	CheckCode string `json:"checkCode"`
}

// Group is the replicated state of one broker group (upstream's
// BrokerReplicaInfo and SyncStateInfo together).
type Group struct {
	Cluster  string            `json:"cluster"`
	Name     string            `json:"name"`
	Replicas map[int64]Replica `json:"replicas"`
	// NextID is the id GET_NEXT_BROKER_ID offers: one past the largest
	// ever applied.
	NextID int64 `json:"nextId"`
	// Master is the master's id, 0 when the group has none.
	Master      int64 `json:"master"`
	MasterEpoch int32 `json:"masterEpoch"`
	// SyncStateSet holds ids, ascending.
	SyncStateSet []int64 `json:"syncStateSet"`
	SSEpoch      int32   `json:"syncStateSetEpoch"`
}

// InSync reports whether id is in the SyncStateSet.
func (g *Group) InSync(id int64) bool { return slices.Contains(g.SyncStateSet, id) }

// MasterAddr is the master's address, "" when there is none.
func (g *Group) MasterAddr() string {
	if g.Master == 0 {
		return ""
	}
	return g.Replicas[g.Master].Addr
}

// IDs lists the replica ids, ascending.
func (g *Group) IDs() []int64 { return slices.Sorted(maps.Keys(g.Replicas)) }

// clone returns a deep copy.
func (g *Group) clone() *Group {
	c := *g
	c.Replicas = maps.Clone(g.Replicas)
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return &c
}

// State is the controller's replicated state: the groups by broker name.
// Apply is its only writer; it is deterministic.
type State struct {
	Groups map[string]*Group `json:"groups"`
}

// NewState returns an empty state.
func NewState() *State { return &State{Groups: map[string]*Group{}} }

// Command operations.
const (
	OpApplyBrokerID     = "applyBrokerId"
	OpUpdateAddress     = "updateBrokerAddress"
	OpElectMaster       = "electMaster"
	OpAlterSyncStateSet = "alterSyncStateSet"
	OpCleanBrokerData   = "cleanBrokerData"
)

// Command is one replicated write (upstream's events), carrying the
// epochs the leader saw when it decided, which Apply checks again.
type Command struct {
	Op         string `json:"op"`
	Cluster    string `json:"cluster,omitempty"`
	BrokerName string `json:"brokerName"`
	// BrokerID: the id applied for (OpApplyBrokerID, OpUpdateAddress).
	BrokerID  int64  `json:"brokerId,omitempty"`
	Addr      string `json:"addr,omitempty"`
	CheckCode string `json:"checkCode,omitempty"`
	// NewMaster: OpElectMaster's winner; 0 records that the master is
	// gone and nobody could be elected.
	NewMaster int64 `json:"newMaster,omitempty"`
	// MasterID, MasterEpoch, SSEpoch: what the proposer saw (elect:
	// MasterEpoch; alter: all three).
	MasterID    int64 `json:"masterId,omitempty"`
	MasterEpoch int32 `json:"masterEpoch"`
	SSEpoch     int32 `json:"syncStateSetEpoch"`
	// IDs: the new SyncStateSet (alter) or the ids to clean (clean; empty
	// = the whole group).
	IDs []int64 `json:"ids,omitempty"`
}

// Encode returns the command as stored in the Raft log.
func (c *Command) Encode() []byte {
	b, _ := json.Marshal(c) // a struct of strings and numbers cannot fail
	return b
}

// DecodeCommand reads a command from a Raft log entry.
func DecodeCommand(b []byte) (*Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("controller: bad command: %w", err)
	}
	return &c, nil
}

// Result is what Apply answers: a response code (remoting.Success or a
// controller code) and a remark.
type Result struct {
	Code   int
	Remark string
}

func fail(code int, format string, a ...any) Result {
	return Result{Code: code, Remark: fmt.Sprintf(format, a...)}
}

// Apply applies one command. It never fails other than by its Result:
// a command whose preconditions no longer hold changes nothing.
func (s *State) Apply(c *Command) Result {
	switch c.Op {
	case OpApplyBrokerID:
		return s.applyBrokerID(c)
	case OpUpdateAddress:
		g := s.Groups[c.BrokerName]
		if g == nil {
			return fail(protocol.ControllerBrokerNeedToBeRegistered, "broker group %s is not registered", c.BrokerName)
		}
		r, ok := g.Replicas[c.BrokerID]
		if !ok {
			return fail(protocol.ControllerBrokerNeedToBeRegistered, "broker id %d is not registered in %s", c.BrokerID, c.BrokerName)
		}
		r.Addr = c.Addr
		g.Replicas[c.BrokerID] = r
		return Result{}
	case OpElectMaster:
		return s.electMaster(c)
	case OpAlterSyncStateSet:
		return s.alterSyncStateSet(c)
	case OpCleanBrokerData:
		return s.clean(c)
	}
	return fail(protocol.ControllerInvalidRequest, "unknown command %q", c.Op)
}

func (s *State) applyBrokerID(c *Command) Result {
	if c.BrokerID < protocol.FirstControllerBrokerID {
		return fail(protocol.ControllerBrokerIDInvalid, "broker id %d is below %d", c.BrokerID, protocol.FirstControllerBrokerID)
	}
	addr, _, _ := strings.Cut(c.CheckCode, ";")
	g := s.Groups[c.BrokerName]
	if g == nil {
		if c.BrokerID != protocol.FirstControllerBrokerID {
			return fail(protocol.ControllerBrokerIDInvalid, "broker group %s has no broker yet, the first id is %d, not %d", c.BrokerName, protocol.FirstControllerBrokerID, c.BrokerID)
		}
		g = &Group{Cluster: c.Cluster, Name: c.BrokerName, Replicas: map[int64]Replica{}, NextID: protocol.FirstControllerBrokerID}
		s.Groups[c.BrokerName] = g
	}
	if r, ok := g.Replicas[c.BrokerID]; ok {
		if r.CheckCode != c.CheckCode {
			return fail(protocol.ControllerBrokerIDInvalid, "broker id %d of %s belongs to another broker", c.BrokerID, c.BrokerName)
		}
		return Result{}
	}
	g.Replicas[c.BrokerID] = Replica{Addr: addr, CheckCode: c.CheckCode}
	g.NextID = max(g.NextID, c.BrokerID+1)
	return Result{}
}

func (s *State) electMaster(c *Command) Result {
	g := s.Groups[c.BrokerName]
	if g == nil {
		return fail(protocol.ControllerBrokerNeedToBeRegistered, "broker group %s is not registered", c.BrokerName)
	}
	if c.MasterEpoch != g.MasterEpoch {
		return fail(protocol.ControllerFencedMasterEpoch, "master epoch of %s is %d, not %d", c.BrokerName, g.MasterEpoch, c.MasterEpoch)
	}
	if c.NewMaster == 0 {
		// The master is gone and nobody could take over: keep the
		// SyncStateSet, so that one of its members is elected when it
		// comes back.
		g.Master = 0
		g.MasterEpoch++
		return Result{}
	}
	if _, ok := g.Replicas[c.NewMaster]; !ok {
		return fail(protocol.ControllerInvalidReplicas, "broker id %d is not a replica of %s", c.NewMaster, c.BrokerName)
	}
	g.Master = c.NewMaster
	g.MasterEpoch++
	g.SyncStateSet = []int64{c.NewMaster}
	g.SSEpoch++
	return Result{}
}

func (s *State) alterSyncStateSet(c *Command) Result {
	g := s.Groups[c.BrokerName]
	if g == nil {
		return fail(protocol.ControllerAlterSyncStateSetFailed, "broker group %s is not registered", c.BrokerName)
	}
	if g.Master == 0 || g.Master != c.MasterID {
		return fail(protocol.ControllerInvalidMaster, "the master of %s is %d, not %d", c.BrokerName, g.Master, c.MasterID)
	}
	if c.MasterEpoch != g.MasterEpoch {
		return fail(protocol.ControllerFencedMasterEpoch, "master epoch of %s is %d, not %d", c.BrokerName, g.MasterEpoch, c.MasterEpoch)
	}
	if c.SSEpoch != g.SSEpoch {
		return fail(protocol.ControllerFencedSyncStateSetEpoch, "SyncStateSet epoch of %s is %d, not %d", c.BrokerName, g.SSEpoch, c.SSEpoch)
	}
	set := slices.Sorted(slices.Values(c.IDs))
	set = slices.Compact(set)
	if slices.Equal(set, g.SyncStateSet) {
		return fail(protocol.ControllerAlterSyncStateSetFailed, "the new SyncStateSet of %s equals the old one", c.BrokerName)
	}
	for _, id := range set {
		if _, ok := g.Replicas[id]; !ok {
			return fail(protocol.ControllerInvalidReplicas, "broker id %d is not a replica of %s", id, c.BrokerName)
		}
	}
	if !slices.Contains(set, g.Master) {
		return fail(protocol.ControllerAlterSyncStateSetFailed, "the new SyncStateSet of %s leaves out its master %d", c.BrokerName, g.Master)
	}
	g.SyncStateSet = set
	g.SSEpoch++
	return Result{}
}

func (s *State) clean(c *Command) Result {
	g := s.Groups[c.BrokerName]
	if g == nil {
		return fail(protocol.ControllerInvalidCleanBrokerMetadata, "broker group %s does not exist", c.BrokerName)
	}
	if len(c.IDs) == 0 {
		delete(s.Groups, c.BrokerName)
		return Result{}
	}
	for _, id := range c.IDs {
		delete(g.Replicas, id)
		g.SyncStateSet = slices.DeleteFunc(g.SyncStateSet, func(x int64) bool { return x == id })
		if g.Master == id {
			g.Master = 0
		}
	}
	if len(g.Replicas) == 0 || len(g.SyncStateSet) == 0 {
		delete(s.Groups, c.BrokerName)
	}
	return Result{}
}

// Group returns a copy of the named group, or nil.
func (s *State) Group(name string) *Group {
	g := s.Groups[name]
	if g == nil {
		return nil
	}
	return g.clone()
}
