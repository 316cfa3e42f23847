package broker

import (
	"fmt"
	"net"
	"strconv"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// haListenAddr is the address of the HA listener: haListenPort, or the
// listen port + 1 (RocketMQ's default), on the listen host. A broker told
// to listen on port 0 (any) takes any port for HA too, and registers it.
func (b *Broker) haListenAddr(port int) string {
	host, configured, _ := net.SplitHostPort(b.opts.ListenAddr)
	p := b.opts.HAListenPort
	if p == 0 && configured != "0" {
		p = port + 1
	}
	return net.JoinHostPort(host, strconv.Itoa(p))
}

// startHA starts replication as BrokerRole says: a master listens for
// slaves (a SYNC_MASTER's sends then wait for one), a slave follows
// HAMasterAddress or the master the name server names.
func (b *Broker) startHA(port int) error {
	cfg := ha.Config{Role: b.opts.BrokerRole, MasterAddress: b.opts.HAMasterAddress, Options: b.opts.HA}
	if cfg.Options.Logger == nil {
		cfg.Options.Logger = b.log
	}
	if cfg.Role != ha.RoleSlave {
		cfg.ListenAddr = b.haListenAddr(port)
	}
	svc, err := ha.Start(b.store, cfg)
	if err != nil && cfg.Role != ha.RoleSlave && b.opts.HAListenPort == 0 {
		// The default port (listen port + 1) is taken: take any, which
		// the name server tells slaves. A haListenPort set is kept or fails.
		b.log.Warn("the default HA port (listen port + 1) is taken; listening for slaves on another, registered with the name server",
			"addr", cfg.ListenAddr, "err", err)
		host, _, _ := net.SplitHostPort(cfg.ListenAddr)
		cfg.ListenAddr = net.JoinHostPort(host, "0")
		svc, err = ha.Start(b.store, cfg)
	}
	if err != nil {
		return err
	}
	b.ha = svc
	b.haAddr = net.JoinHostPort(b.opts.BrokerIP1, strconv.Itoa(port+1))
	if m := svc.Master(); m != nil {
		b.haAddr = net.JoinHostPort(b.opts.BrokerIP1, strconv.Itoa(m.Addr().(*net.TCPAddr).Port))
	}
	return nil
}

// learnMaster takes the master's address (to sync tables from) and HA
// address (unless haMasterAddress was set) from the name server's answer
// to a slave's registration.
func (b *Broker) learnMaster(res namesrv.RegisterResult) {
	if b.opts.BrokerRole != ha.RoleSlave {
		return
	}
	b.setMasterAddr(res.MasterAddr)
	if b.ha == nil || b.opts.HAMasterAddress != "" || res.HAServerAddr == "" {
		return
	}
	b.ha.SetMasterAddress(res.HAServerAddr)
}

// refuseOnSlave is the answer of a slave to a send: RocketMQ's store refuses
// puts in slave mode (SERVICE_NOT_AVAILABLE); nil on a master.
func (b *Broker) refuseOnSlave() *remoting.Command {
	if b.opts.BrokerRole != ha.RoleSlave {
		return nil
	}
	return errResponse(remoting.ServiceNotAvailable,
		"service not available now. It may be caused by one of the following reasons: "+
			"the broker's disk is full, messages are put to the slave, message store has been shut down, etc. (this broker %s is a slave)", b.opts.BrokerName)
}

// closeHA stops replication before the store closes.
func (b *Broker) closeHA() error {
	if b.ha == nil {
		return nil
	}
	if err := b.ha.Close(); err != nil {
		return fmt.Errorf("ha: %w", err)
	}
	return nil
}
