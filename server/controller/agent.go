package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Role is what a broker in controller mode knows of its group from the
// controller: its id, the master, the SyncStateSet and their epochs.
type Role struct {
	BrokerID     int64
	MasterID     int64 // 0: no master
	MasterAddr   string
	MasterEpoch  int32
	SyncStateSet []int64
	SSEpoch      int32
}

// IsMaster reports whether the broker is its group's master.
func (r Role) IsMaster() bool { return r.MasterID != 0 && r.MasterID == r.BrokerID }

// AgentOptions configure an Agent: the broker side of controller mode
// (upstream's ReplicasManager), in broker.conf's keys.
type AgentOptions struct {
	Cluster    string // brokerClusterName
	BrokerName string // brokerName
	BrokerAddr string // the broker's remoting address (brokerIP1:listenPort)
	// Controllers is controllerAddr split at ';'.
	Controllers []string
	// IdentityPath is storePathBrokerIdentity; the temp file is
	// IdentityPath+"-temp".
	IdentityPath string
	// HeartbeatInterval is brokerHeartbeatInterval (1 s).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is controllerHeartBeatTimeoutMills (10 s), sent in
	// every heartbeat.
	HeartbeatTimeout time.Duration
	// SyncPeriod is syncBrokerMetadataPeriod (5 s): the replica-info poll.
	SyncPeriod time.Duration
	// ElectionPriority is brokerElectionPriority (lower wins).
	ElectionPriority int64
	// Progress reports the broker's last epoch, max and confirm offsets
	// for heartbeats (nil: zeros).
	Progress func() (epoch int32, maxOffset, confirmOffset int64)
	// OnRole is called (from one goroutine at a time) whenever the role
	// changes: the master, its epoch or the SyncStateSet.
	OnRole func(Role)
	Logger *slog.Logger
}

// Agent registers a broker with the controllers, heartbeats to every one
// of them, learns and follows its role. Until it knows a role the broker
// is fenced (Role reports ok=false).
type Agent struct {
	o      AgentOptions
	log    *slog.Logger
	client *remoting.Client
	stop   chan struct{}
	wg     sync.WaitGroup
	kick   chan struct{}

	mu     sync.Mutex
	leader string
	id     int64
	role   Role
	known  bool
	resync bool       // hand the next role to OnRole even if unchanged
	roleMu sync.Mutex // serializes OnRole
}

// NewAgent returns an agent; Start runs it.
func NewAgent(o AgentOptions) (*Agent, error) {
	if len(o.Controllers) == 0 {
		return nil, errors.New("controller mode: controllerAddr is empty")
	}
	if o.IdentityPath == "" || o.BrokerName == "" || o.BrokerAddr == "" {
		return nil, errors.New("controller mode: identity path, broker name and address are required")
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = time.Second
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 10 * time.Second
	}
	if o.SyncPeriod <= 0 {
		o.SyncPeriod = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c, err := remoting.NewClient(remoting.Options{DialTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	return &Agent{o: o, log: o.Logger, client: c, stop: make(chan struct{}), kick: make(chan struct{}, 1)}, nil
}

// Start runs registration, heartbeats and the role poll in the
// background.
func (a *Agent) Start() {
	a.wg.Add(2)
	go a.heartbeatLoop()
	go a.mainLoop()
}

// Close stops the agent.
func (a *Agent) Close() error {
	select {
	case <-a.stop:
		return nil
	default:
	}
	close(a.stop)
	a.client.Close()
	a.wg.Wait()
	return nil
}

// Role returns the broker's role; ok is false while it has none (fenced).
func (a *Agent) Role() (Role, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.role
	r.SyncStateSet = append([]int64(nil), r.SyncStateSet...)
	return r, a.known
}

// BrokerID is the controller-assigned id, 0 before registration.
func (a *Agent) BrokerID() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.id
}

// HandleNotify is the broker's processor of NOTIFY_BROKER_ROLE_CHANGED
// (1008): the controller pushes a new master at once.
func (a *Agent) HandleNotify(_ context.Context, req *remoting.Request) *remoting.Command {
	r := Role{MasterAddr: req.Ext("masterAddress")}
	r.MasterID, _ = strconv.ParseInt(req.Ext("masterBrokerId"), 10, 64)
	e, _ := strconv.ParseInt(req.Ext("masterEpoch"), 10, 32)
	r.MasterEpoch = int32(e)
	var ss protocol.SyncStateSetBody
	if json.Unmarshal(req.Body, &ss) == nil {
		r.SyncStateSet, r.SSEpoch = ss.SyncStateSet, ss.SyncStateSetEpoch
	}
	a.update(r)
	return remoting.NewResponse(remoting.Success, "")
}

// update takes a role seen from the controller if it is not older than
// the one held (by master epoch, then SyncStateSet epoch).
func (a *Agent) update(r Role) {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	a.mu.Lock()
	if a.id == 0 {
		a.mu.Unlock()
		return
	}
	old := a.role
	if a.known && (r.MasterEpoch < old.MasterEpoch || (r.MasterEpoch == old.MasterEpoch && r.SSEpoch < old.SSEpoch)) {
		a.mu.Unlock()
		return
	}
	r.BrokerID = a.id
	changed := a.resync || !a.known || r.MasterID != old.MasterID || r.MasterEpoch != old.MasterEpoch || r.SSEpoch != old.SSEpoch || r.MasterAddr != old.MasterAddr
	a.resync = false
	if r.MasterID == 0 {
		// No master: fenced until one is elected.
		changed = a.known
		a.known = false
		a.role = r
		a.mu.Unlock()
		if changed {
			a.log.Warn("controller mode: the group has no master; fenced")
			a.wake()
		}
		return
	}
	a.role, a.known = r, true
	a.mu.Unlock()
	if changed {
		a.log.Info("controller mode: role", "brokerId", r.BrokerID, "master", r.IsMaster(), "masterId", r.MasterID,
			"masterAddr", r.MasterAddr, "masterEpoch", r.MasterEpoch, "syncStateSet", r.SyncStateSet, "syncStateSetEpoch", r.SSEpoch)
		if a.o.OnRole != nil {
			a.o.OnRole(r)
		}
	}
}

func (a *Agent) wake() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *Agent) call(addr string, code int, ext map[string]string, body []byte) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return a.client.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
}

// findLeader asks the controllers for the leader's address.
func (a *Agent) findLeader() (string, error) {
	for _, c := range a.o.Controllers {
		r, err := a.call(c, protocol.ControllerGetMetadataInfo, nil, nil)
		if err != nil || r.Code != remoting.Success {
			continue
		}
		if l := r.Ext("controllerLeaderAddress"); l != "" {
			a.mu.Lock()
			a.leader = l
			a.mu.Unlock()
			return l, nil
		}
	}
	return "", errors.New("controller mode: no controller leader known")
}

// leaderCall sends a request to the leader, looking it up again when the
// one known is not (any more).
func (a *Agent) leaderCall(code int, ext map[string]string, body []byte) (*remoting.Command, error) {
	a.mu.Lock()
	l := a.leader
	a.mu.Unlock()
	for try := 0; try < 2; try++ {
		if l == "" {
			var err error
			if l, err = a.findLeader(); err != nil {
				return nil, err
			}
		}
		r, err := a.call(l, code, ext, body)
		if err == nil && r.Code != protocol.ControllerNotLeader {
			return r, nil
		}
		l = ""
		a.mu.Lock()
		a.leader = ""
		a.mu.Unlock()
	}
	return nil, errors.New("controller mode: the controller leader did not answer")
}

// register finds or gets the broker's id and registers it (upstream's
// ReplicasManager.register): the identity file, or the temp file from an
// interrupted application, or a new id from GET_NEXT_BROKER_ID.
func (a *Agent) register() error {
	base := map[string]string{"clusterName": a.o.Cluster, "brokerName": a.o.BrokerName}
	id, ok, err := readIdentity(a.o.IdentityPath, false)
	if err != nil {
		return fmt.Errorf("controller mode: %s: %w", a.o.IdentityPath, err)
	}
	if !ok {
		tempPath := a.o.IdentityPath + "-temp"
		tmp, tok, err := readIdentity(tempPath, true)
		if err != nil || !tok {
			r, err := a.leaderCall(protocol.ControllerGetNextBrokerID, base, nil)
			if err != nil {
				return err
			}
			if r.Code != remoting.Success {
				return fmt.Errorf("controller mode: GET_NEXT_BROKER_ID: %d %s", r.Code, r.Remark)
			}
			next, _ := strconv.ParseInt(r.Ext("nextBrokerId"), 10, 64)
			tmp = Identity{Cluster: a.o.Cluster, BrokerName: a.o.BrokerName, BrokerID: next,
				CheckCode: a.o.BrokerAddr + ";" + strconv.FormatInt(time.Now().UnixMilli(), 10)}
			if err := writeIdentity(tempPath, tmp, true); err != nil {
				return err
			}
		}
		ext := map[string]string{"clusterName": a.o.Cluster, "brokerName": a.o.BrokerName,
			"appliedBrokerId": itoa(tmp.BrokerID), "registerCheckCode": tmp.CheckCode}
		r, err := a.leaderCall(protocol.ControllerApplyBrokerID, ext, nil)
		if err != nil {
			return err
		}
		if r.Code != remoting.Success {
			os.Remove(tempPath) // the id went to another broker: start over
			return fmt.Errorf("controller mode: APPLY_BROKER_ID %d: %d %s", tmp.BrokerID, r.Code, r.Remark)
		}
		id = Identity{Cluster: a.o.Cluster, BrokerName: a.o.BrokerName, BrokerID: tmp.BrokerID}
		if err := writeIdentity(a.o.IdentityPath, id, false); err != nil {
			return err
		}
		os.Remove(tempPath)
	}
	if id.BrokerName != a.o.BrokerName {
		return fmt.Errorf("controller mode: %s names broker %s, not %s", a.o.IdentityPath, id.BrokerName, a.o.BrokerName)
	}
	a.mu.Lock()
	a.id = id.BrokerID
	a.mu.Unlock()
	ext := map[string]string{"clusterName": a.o.Cluster, "brokerName": a.o.BrokerName, "brokerId": itoa(id.BrokerID), "brokerAddress": a.o.BrokerAddr}
	r, err := a.leaderCall(protocol.ControllerRegisterBroker, ext, nil)
	if err != nil {
		return err
	}
	if r.Code != remoting.Success {
		return fmt.Errorf("controller mode: REGISTER_BROKER: %d %s", r.Code, r.Remark)
	}
	a.log.Info("controller mode: registered", "brokerId", id.BrokerID)
	a.heartbeatAll()
	a.fromResponse(r)
	return nil
}

// fromResponse takes the role from a register / replica-info / elect
// answer.
func (a *Agent) fromResponse(r *remoting.Command) {
	role := Role{MasterAddr: r.Ext("masterAddress")}
	role.MasterID, _ = strconv.ParseInt(r.Ext("masterBrokerId"), 10, 64)
	e, _ := strconv.ParseInt(r.Ext("masterEpoch"), 10, 32)
	role.MasterEpoch = int32(e)
	var ss protocol.SyncStateSetBody
	if json.Unmarshal(r.Body, &ss) == nil && ss.SyncStateSet != nil {
		role.SyncStateSet, role.SSEpoch = ss.SyncStateSet, ss.SyncStateSetEpoch
	} else {
		var eb protocol.ElectMasterResponseBody
		if json.Unmarshal(r.Body, &eb) == nil {
			role.SyncStateSet = eb.SyncStateSet
		}
		s, _ := strconv.ParseInt(r.Ext("syncStateSetEpoch"), 10, 32)
		role.SSEpoch = int32(s)
	}
	a.update(role)
}

// sync polls the replica info and asks for an election when the group
// has no master (upstream's brokerElect).
func (a *Agent) sync() {
	r, err := a.leaderCall(protocol.ControllerGetReplicaInfo, map[string]string{"brokerName": a.o.BrokerName}, nil)
	if err != nil {
		a.log.Debug("controller mode: replica info", "err", err)
		return
	}
	if r.Code == remoting.Success {
		a.fromResponse(r)
	}
	if _, ok := a.Role(); ok {
		return
	}
	er, err := a.leaderCall(protocol.ControllerElectMaster, map[string]string{"clusterName": a.o.Cluster, "brokerName": a.o.BrokerName, "brokerId": itoa(a.BrokerID())}, nil)
	if err != nil {
		return
	}
	if er.Code == remoting.Success || er.Code == protocol.ControllerMasterStillExist {
		a.fromResponse(er)
	}
}

func (a *Agent) mainLoop() {
	defer a.wg.Done()
	for {
		err := a.register()
		if err == nil {
			break
		}
		a.log.Warn("controller mode: registration failed, retrying", "err", err)
		select {
		case <-a.stop:
			return
		case <-time.After(time.Duration(500+rand.IntN(1000)) * time.Millisecond):
		}
	}
	a.sync()
	a.every(a.o.SyncPeriod, a.kick, a.sync)
}

func (a *Agent) heartbeatLoop() {
	defer a.wg.Done()
	a.every(a.o.HeartbeatInterval, nil, a.heartbeatAll)
}

// every runs f every d, and at once on kick, until the agent stops.
func (a *Agent) every(d time.Duration, kick <-chan struct{}, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		case <-kick:
		}
		f()
	}
}

// heartbeatAll sends BROKER_HEARTBEAT to every controller (not only the
// leader: a new leader must know who lives, upstream's #5712).
func (a *Agent) heartbeatAll() {
	id := a.BrokerID()
	if id == 0 {
		return
	}
	var epoch int32
	var maxOff, confirm int64
	if a.o.Progress != nil {
		epoch, maxOff, confirm = a.o.Progress()
	}
	ext := map[string]string{
		"clusterName": a.o.Cluster, "brokerName": a.o.BrokerName, "brokerAddr": a.o.BrokerAddr, "brokerId": itoa(id),
		"epoch": itoa(int64(epoch)), "maxOffset": itoa(maxOff), "confirmOffset": itoa(confirm),
		"heartbeatTimeoutMills": itoa(a.o.HeartbeatTimeout.Milliseconds()), "electionPriority": itoa(a.o.ElectionPriority),
	}
	for _, c := range a.o.Controllers {
		ctx, cancel := context.WithTimeout(context.Background(), a.o.HeartbeatInterval)
		_ = a.client.InvokeOneway(ctx, c, remoting.NewRequest(remoting.BrokerHeartbeat, ext, nil))
		cancel()
	}
}

// Resync makes the agent hand its role to OnRole again at the next poll,
// even if unchanged, and polls now: after a request whose answer was lost,
// the caller learns the controller's state rather than guess it.
func (a *Agent) Resync() {
	a.mu.Lock()
	a.resync = true
	a.mu.Unlock()
	a.wake()
}

// AlterSyncStateSet asks the controller to change the SyncStateSet (the
// master only) and applies the answer; it returns the new role.
func (a *Agent) AlterSyncStateSet(ids []int64) (Role, error) {
	r, ok := a.Role()
	if !ok || !r.IsMaster() {
		return r, errors.New("controller mode: not the master")
	}
	resp, err := a.leaderCall(protocol.ControllerAlterSyncStateSet,
		map[string]string{"brokerName": a.o.BrokerName, "masterBrokerId": itoa(r.BrokerID), "masterEpoch": itoa(int64(r.MasterEpoch))},
		encode(protocol.SyncStateSetBody{SyncStateSet: ids, SyncStateSetEpoch: r.SSEpoch}))
	if err != nil {
		return r, err
	}
	if resp.Code != remoting.Success {
		if resp.Code == protocol.ControllerFencedMasterEpoch || resp.Code == protocol.ControllerInvalidMaster {
			a.wake() // deposed: learn the new master now
		}
		return r, fmt.Errorf("controller mode: ALTER_SYNC_STATE_SET: %d %s", resp.Code, resp.Remark)
	}
	var ss protocol.SyncStateSetBody
	if err := json.Unmarshal(resp.Body, &ss); err != nil {
		return r, err
	}
	nr := r
	nr.SyncStateSet, nr.SSEpoch = ss.SyncStateSet, ss.SyncStateSetEpoch
	a.update(nr)
	got, _ := a.Role()
	return got, nil
}
