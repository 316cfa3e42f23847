package controller

import (
	"time"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// startGrace is how long a controller that has just started waits before
// it calls a master dead for want of heartbeats it never had a chance to
// hear (brokers heartbeat every second; upstream's #5712 and #10812 are
// elections on a liveness table that was not filled yet).
const startGrace = 3 * time.Second

// scanLoop expires heartbeats every scanNotActiveBrokerInterval and, on
// the leader, re-elects masters that died (every
// scanInactiveMasterInterval too: an election that found nobody is retried
// when a member comes back, upstream's #5009).
func (c *Controller) scanLoop() {
	defer c.wg.Done()
	cfg := c.Config()
	expire := time.NewTicker(cfg.ScanNotActiveBrokerInterval)
	defer expire.Stop()
	masters := time.NewTicker(cfg.ScanInactiveMasterInterval)
	defer masters.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-expire.C:
			for _, b := range c.live.expire() {
				c.log.Info("broker heartbeat expired", "brokerName", b.BrokerName, "brokerId", b.BrokerID, "addr", b.Addr)
				c.brokerGone(b)
			}
		case <-masters.C:
			c.scanInactiveMasters()
		}
	}
}

// connClosed: a broker whose connection to this controller closed is
// inactive at once (upstream's BrokerHousekeepingService).
func (c *Controller) connClosed(conn *remoting.Conn) {
	for _, b := range c.live.closed(conn) {
		c.log.Info("broker channel closed", "brokerName", b.BrokerName, "brokerId", b.BrokerID, "addr", b.Addr)
		c.brokerGone(b)
	}
}

// brokerGone elects a new master when the broker that went was one.
func (c *Controller) brokerGone(b BrokerLive) {
	if !c.IsLeader() {
		return
	}
	g := c.fsm.group(b.BrokerName)
	if g == nil || g.Master != b.BrokerID {
		return
	}
	c.electWithRetry(b.BrokerName)
}

// scanInactiveMasters elects for every group whose master is dead while
// one of its replicas lives.
func (c *Controller) scanInactiveMasters() {
	if !c.IsLeader() || c.now().Sub(c.start) < startGrace {
		return
	}
	for _, g := range c.fsm.groups() {
		if g.Master != 0 && c.live.alive(g.Name, g.Master) {
			continue
		}
		anyAlive := false
		for id := range g.Replicas {
			if c.live.alive(g.Name, id) {
				anyAlive = true
				break
			}
		}
		if anyAlive && (g.Master != 0 || len(g.SyncStateSet) > 0) {
			c.electWithRetry(g.Name)
		}
	}
}

// electWithRetry runs a controller-triggered election, retried
// electMasterMaxRetryCount times while it loses a race on the epoch.
func (c *Controller) electWithRetry(name string) {
	n := max(c.Config().ElectMasterMaxRetryCount, 1)
	for range n {
		code, g, remark := c.doElect(name, -1, false)
		switch code {
		case remoting.Success, protocol.ControllerMasterStillExist, protocol.ControllerMasterNotAvailable:
			if g != nil && code == remoting.Success {
				c.log.Info("controller re-elected a master", "brokerName", name, "master", g.Master, "masterEpoch", g.MasterEpoch)
			}
			return
		case protocol.ControllerNotLeader, protocol.ControllerBrokerNeedToBeRegistered:
			return
		}
		c.log.Warn("controller election failed, retrying", "brokerName", name, "code", code, "remark", remark)
	}
}
