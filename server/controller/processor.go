package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// register sets the controller's processors on its server.
func (c *Controller) register(s *remoting.Server) {
	lead := func(f func(*remoting.Request) *remoting.Command) remoting.ProcessorFunc {
		return func(_ context.Context, req *remoting.Request) *remoting.Command {
			var resp *remoting.Command
			if c.IsLeader() {
				resp = f(req)
			} else {
				_, addr := c.LeaderID()
				resp = remoting.NewResponse(protocol.ControllerNotLeader, fmt.Sprintf("controller %s is not the leader (leader: %s)", c.cfg.SelfID, addr))
			}
			c.counts.request(req.Code, resp.Code)
			return resp
		}
	}
	any := func(f func(*remoting.Request) *remoting.Command) remoting.ProcessorFunc {
		return func(_ context.Context, req *remoting.Request) *remoting.Command {
			resp := f(req)
			c.counts.request(req.Code, resp.Code)
			return resp
		}
	}
	s.Register(protocol.ControllerGetNextBrokerID, lead(c.getNextBrokerID))
	s.Register(protocol.ControllerApplyBrokerID, lead(c.applyBrokerID))
	s.Register(protocol.ControllerRegisterBroker, lead(c.registerBroker))
	s.Register(protocol.ControllerElectMaster, lead(c.electMaster))
	s.Register(protocol.ControllerAlterSyncStateSet, lead(c.alterSyncStateSet))
	s.Register(protocol.ControllerGetReplicaInfo, lead(c.getReplicaInfo))
	s.Register(protocol.ControllerGetSyncStateData, lead(c.getSyncStateData))
	s.Register(protocol.CleanBrokerData, lead(c.cleanBrokerData))
	s.Register(protocol.ControllerGetMetadataInfo, any(c.getMetadataInfo))
	s.Register(remoting.BrokerHeartbeat, any(c.heartbeat))
	s.Register(protocol.GetControllerConfig, any(c.getConfig))
	s.Register(protocol.UpdateControllerConfig, any(c.updateConfig))
}

// header reads typed ext fields, remembering the first error.
type header struct {
	r   *remoting.Request
	err error
}

func (h *header) str(k string, required bool) string {
	v := h.r.Ext(k)
	if v == "" && required && h.err == nil {
		h.err = fmt.Errorf("header field %s is missing", k)
	}
	return v
}

func (h *header) i64(k string, required bool, def int64) int64 {
	v := h.str(k, required)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && h.err == nil {
		h.err = fmt.Errorf("header field %s=%q is not a number", k, v)
	}
	return n
}

func (h *header) bool(k string) bool {
	b, _ := strconv.ParseBool(h.r.Ext(k))
	return b
}

func bad(err error) *remoting.Command {
	return remoting.NewResponse(protocol.ControllerInvalidRequest, err.Error())
}

func respond(r Result) *remoting.Command { return remoting.NewResponse(r.Code, r.Remark) }

func (c *Controller) getNextBrokerID(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	cluster, name := h.str("clusterName", false), h.str("brokerName", true)
	if h.err != nil {
		return bad(h.err)
	}
	next := int64(protocol.FirstControllerBrokerID)
	if g := c.fsm.group(name); g != nil {
		next = g.NextID
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = map[string]string{"clusterName": cluster, "brokerName": name, "nextBrokerId": itoa(next)}
	return resp
}

func (c *Controller) applyBrokerID(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	cmd := &Command{Op: OpApplyBrokerID, Cluster: h.str("clusterName", false), BrokerName: h.str("brokerName", true),
		BrokerID: h.i64("appliedBrokerId", true, 0), CheckCode: h.str("registerCheckCode", true)}
	if h.err != nil {
		return bad(h.err)
	}
	resp := respond(c.propose(cmd))
	resp.ExtFields = map[string]string{"clusterName": cmd.Cluster, "brokerName": cmd.BrokerName}
	return resp
}

// masterFields puts the master's id, address and epochs in resp.
func masterFields(resp *remoting.Command, g *Group, withSSEpoch bool) {
	if resp.ExtFields == nil {
		resp.ExtFields = map[string]string{}
	}
	if g.Master != 0 {
		resp.ExtFields["masterBrokerId"] = itoa(g.Master)
		resp.ExtFields["masterAddress"] = g.MasterAddr()
	}
	resp.ExtFields["masterEpoch"] = itoa(int64(g.MasterEpoch))
	if withSSEpoch {
		resp.ExtFields["syncStateSetEpoch"] = itoa(int64(g.SSEpoch))
	}
}

func (c *Controller) registerBroker(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	cluster, name := h.str("clusterName", false), h.str("brokerName", true)
	id, addr := h.i64("brokerId", true, 0), h.str("brokerAddress", true)
	if h.err != nil {
		return bad(h.err)
	}
	g := c.fsm.group(name)
	if g == nil {
		return remoting.NewResponse(protocol.ControllerBrokerNeedToBeRegistered, fmt.Sprintf("broker group %s is not registered", name))
	}
	if _, ok := g.Replicas[id]; !ok {
		return remoting.NewResponse(protocol.ControllerBrokerNeedToBeRegistered, fmt.Sprintf("broker id %d is not registered in %s", id, name))
	}
	if g.Replicas[id].Addr != addr {
		if r := c.propose(&Command{Op: OpUpdateAddress, Cluster: cluster, BrokerName: name, BrokerID: id, Addr: addr}); r.Code != remoting.Success {
			return respond(r)
		}
		g = c.fsm.group(name)
		if g == nil {
			return remoting.NewResponse(protocol.ControllerBrokerNeedToBeRegistered, fmt.Sprintf("broker group %s is not registered", name))
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = map[string]string{"clusterName": cluster, "brokerName": name}
	if g.Master != 0 && c.live.alive(name, g.Master) {
		masterFields(resp, g, true)
	}
	resp.Body = syncStateSetBody(g)
	return resp
}

func (c *Controller) getReplicaInfo(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	name := h.str("brokerName", true)
	if h.err != nil {
		return bad(h.err)
	}
	g := c.fsm.group(name)
	if g == nil {
		return remoting.NewResponse(protocol.ControllerBrokerMetadataNotExist, fmt.Sprintf("broker group %s does not exist", name))
	}
	resp := remoting.NewResponse(remoting.Success, "")
	masterFields(resp, g, false)
	resp.Body = syncStateSetBody(g)
	return resp
}

func (c *Controller) electMaster(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	name := h.str("brokerName", true)
	id := h.i64("brokerId", false, -1)
	designate := h.bool("designateElect")
	if h.err != nil {
		return bad(h.err)
	}
	code, g, remark := c.doElect(name, id, designate)
	resp := remoting.NewResponse(code, remark)
	if g != nil && (code == remoting.Success || code == protocol.ControllerMasterStillExist) {
		masterFields(resp, g, true)
		resp.Body = encode(protocol.ElectMasterResponseBody{BrokerMemberGroup: memberGroup(g), SyncStateSet: nonNil(g.SyncStateSet)})
	}
	return resp
}

// doElect runs an election for a group: requested by a broker for itself
// (id > 0), designated by an operator, or triggered by the controller
// (id <= 0). It returns the response code, the group after it, a remark.
func (c *Controller) doElect(name string, id int64, designate bool) (int, *Group, string) {
	g := c.fsm.group(name)
	if g == nil {
		return protocol.ControllerBrokerNeedToBeRegistered, nil, fmt.Sprintf("broker group %s is not registered", name)
	}
	cfg := c.Config()
	var winner int64
	if g.MasterEpoch == 0 && id > 0 {
		// The group never had a master: the requester takes it.
		winner = id
	} else {
		var want int64
		if designate {
			want = id
		}
		winner = elect(g, func(id int64) (BrokerLive, bool) { return c.live.get(name, id) }, cfg.EnableElectUncleanMaster, want)
	}
	switch {
	case winner != 0 && winner == g.Master:
		c.counts.election(electedKeep)
		return protocol.ControllerMasterStillExist, g, fmt.Sprintf("the master %d of %s is still alive", g.Master, name)
	case winner != 0:
		r := c.propose(&Command{Op: OpElectMaster, BrokerName: name, NewMaster: winner, MasterEpoch: g.MasterEpoch})
		if r.Code != remoting.Success {
			return r.Code, nil, r.Remark
		}
		ng := c.fsm.group(name)
		if ng == nil {
			return protocol.ControllerElectMasterFailed, nil, "group removed meanwhile"
		}
		c.counts.election(electedNew)
		c.log.Info("elected a master", "brokerName", name, "master", ng.Master, "addr", ng.MasterAddr(), "masterEpoch", ng.MasterEpoch)
		if cfg.NotifyBrokerRoleChanged {
			c.notifyRoleChanged(ng)
		}
		return remoting.Success, ng, ""
	case id <= 0:
		c.counts.election(electedNone)
		if g.Master != 0 {
			// Record that the master is gone: nobody may act as it.
			if r := c.propose(&Command{Op: OpElectMaster, BrokerName: name, MasterEpoch: g.MasterEpoch}); r.Code != remoting.Success {
				return r.Code, nil, r.Remark
			}
		}
		return protocol.ControllerMasterNotAvailable, nil, fmt.Sprintf("the master of %s is gone and no replica can take over", name)
	}
	c.counts.election(electedNone)
	return protocol.ControllerElectMasterFailed, nil, fmt.Sprintf("no master could be elected for %s", name)
}

// notifyRoleChanged tells the live members of a group of its new master
// (NOTIFY_BROKER_ROLE_CHANGED, oneway).
func (c *Controller) notifyRoleChanged(g *Group) {
	ext := map[string]string{
		"masterAddress": g.MasterAddr(), "masterEpoch": itoa(int64(g.MasterEpoch)),
		"syncStateSetEpoch": itoa(int64(g.SSEpoch)), "masterBrokerId": itoa(g.Master),
	}
	body := syncStateSetBody(g)
	for _, id := range g.IDs() {
		b, ok := c.live.get(g.Name, id)
		if !ok {
			continue
		}
		addr := b.Addr
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := c.client.InvokeOneway(ctx, addr, remoting.NewRequest(protocol.NotifyBrokerRoleChanged, ext, body)); err != nil {
				c.log.Debug("notify broker role changed", "addr", addr, "err", err)
			}
		}()
	}
}

func (c *Controller) alterSyncStateSet(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	name := h.str("brokerName", true)
	master := h.i64("masterBrokerId", true, 0)
	epoch := h.i64("masterEpoch", true, 0)
	if h.err != nil {
		return bad(h.err)
	}
	var body protocol.SyncStateSetBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return bad(fmt.Errorf("SyncStateSet body: %w", err))
	}
	g := c.fsm.group(name)
	if g == nil {
		return remoting.NewResponse(protocol.ControllerAlterSyncStateSetFailed, fmt.Sprintf("broker group %s is not registered", name))
	}
	// The checks of Apply first (a stale master hears that it is stale,
	// whoever else died), then liveness, which Apply cannot see.
	cmd := &Command{Op: OpAlterSyncStateSet, BrokerName: name, MasterID: master, MasterEpoch: int32(epoch),
		SSEpoch: body.SyncStateSetEpoch, IDs: body.SyncStateSet}
	dry := &State{Groups: map[string]*Group{name: g}} // g is a copy
	if res := dry.Apply(cmd); res.Code != remoting.Success {
		return respond(res)
	}
	for _, id := range body.SyncStateSet {
		if !c.live.alive(name, id) {
			return remoting.NewResponse(protocol.ControllerBrokerNotAlive, fmt.Sprintf("broker %d of %s is not alive", id, name))
		}
	}
	r := c.propose(cmd)
	if r.Code != remoting.Success {
		return respond(r)
	}
	ng := c.fsm.group(name)
	if ng == nil {
		return remoting.NewResponse(protocol.ControllerAlterSyncStateSetFailed, "group removed meanwhile")
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = map[string]string{"newSyncStateSetEpoch": itoa(int64(ng.SSEpoch))}
	resp.Body = syncStateSetBody(ng)
	return resp
}

func (c *Controller) getSyncStateData(req *remoting.Request) *remoting.Command {
	var names []string
	if err := json.Unmarshal(req.Body, &names); err != nil {
		return bad(fmt.Errorf("broker names body: %w", err))
	}
	out := protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{}}
	for _, n := range names {
		if g := c.fsm.group(n); g != nil {
			out.ReplicasInfoTable[n] = replicasInfo(g, func(id int64) bool { return c.live.alive(n, id) })
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = encode(out)
	return resp
}

func (c *Controller) cleanBrokerData(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	name := h.str("brokerName", true)
	idsText := h.str("brokerControllerIdsToClean", false)
	living := h.bool("isCleanLivingBroker")
	if h.err != nil {
		return bad(h.err)
	}
	var ids []int64
	for _, s := range strings.Split(idsText, ";") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return remoting.NewResponse(protocol.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("brokerControllerIdsToClean %q: %v", idsText, err))
		}
		ids = append(ids, n)
	}
	g := c.fsm.group(name)
	if g == nil {
		return remoting.NewResponse(protocol.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("broker group %s does not exist", name))
	}
	if !living {
		if len(ids) == 0 && g.Master != 0 {
			return remoting.NewResponse(protocol.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("broker group %s still has a master", name))
		}
		for _, id := range ids {
			if c.live.alive(name, id) {
				return remoting.NewResponse(protocol.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("broker %d of %s is alive", id, name))
			}
		}
	}
	return respond(c.propose(&Command{Op: OpCleanBrokerData, BrokerName: name, IDs: ids}))
}

func (c *Controller) getMetadataInfo(*remoting.Request) *remoting.Command {
	id, addr := c.LeaderID()
	cfg := c.Config()
	peers := make([]string, len(cfg.Peers))
	for i, p := range cfg.Peers {
		peers[i] = p.ID + ":" + p.Addr
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = map[string]string{
		"group": cfg.Group, "controllerLeaderId": id, "controllerLeaderAddress": addr,
		"isLeader": strconv.FormatBool(c.IsLeader()), "peers": strings.Join(peers, ";"),
	}
	return resp
}

func (c *Controller) heartbeat(req *remoting.Request) *remoting.Command {
	h := header{r: req}
	b := BrokerLive{
		Cluster: h.str("clusterName", false), BrokerName: h.str("brokerName", true), Addr: h.str("brokerAddr", true),
		BrokerID: h.i64("brokerId", true, 0), Epoch: int32(h.i64("epoch", false, 0)),
		MaxOffset: h.i64("maxOffset", false, 0), ConfirmOffset: h.i64("confirmOffset", false, 0),
		Timeout:  time.Duration(h.i64("heartbeatTimeoutMills", false, 10000)) * time.Millisecond,
		Priority: h.i64("electionPriority", false, 1<<31-1),
	}
	if h.err != nil {
		return bad(h.err)
	}
	if b.Timeout <= 0 {
		b.Timeout = 10 * time.Second
	}
	c.live.beat(b, req.Conn)
	return remoting.NewResponse(remoting.Success, "")
}

func (c *Controller) getConfig(*remoting.Request) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	cfg := c.Config()
	resp.Body = []byte(FormatProperties(cfg.Properties()))
	return resp
}

// updateConfig changes this controller's settings (not replicated, as
// upstream: mqadmin sends it to each controller). The Raft membership and
// the store path cannot change at run time.
func (c *Controller) updateConfig(req *remoting.Request) *remoting.Command {
	props, err := ReadProperties(strings.NewReader(string(req.Body)))
	if err != nil {
		return bad(err)
	}
	for _, k := range []string{"controllerDLegerGroup", "controllerDLegerPeers", "controllerDLegerSelfId", "controllerStorePath", "configBlackList", "configStorePath"} {
		if _, ok := props[k]; ok {
			return remoting.NewResponse(protocol.ControllerInvalidRequest, fmt.Sprintf("%s cannot be changed at run time", k))
		}
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	cfg := c.cfg
	if _, err := cfg.Apply(props); err != nil {
		return bad(err)
	}
	c.cfg = cfg
	return remoting.NewResponse(remoting.Success, "")
}
