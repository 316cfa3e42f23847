package ha

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rocketstore/rocketstore/store"
)

// Role is a broker's part in replication (brokerRole).
type Role int

// The roles, by RocketMQ's names.
const (
	// RoleAsyncMaster serves slaves; puts do not wait for them (ASYNC_MASTER, the default).
	RoleAsyncMaster Role = iota
	// RoleSyncMaster serves slaves; a put waits until a slave has it, or
	// as many as Options.InSyncReplicas asks (SYNC_MASTER).
	RoleSyncMaster
	// RoleSlave follows a master (SLAVE).
	RoleSlave
)

var roleNames = [...]string{RoleAsyncMaster: "ASYNC_MASTER", RoleSyncMaster: "SYNC_MASTER", RoleSlave: "SLAVE"}

// String is RocketMQ's name of the role.
func (r Role) String() string {
	if r >= 0 && int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ErrBadRole reports a brokerRole RocketMQ does not have.
var ErrBadRole = errors.New("ha: bad brokerRole")

// ParseRole reads a brokerRole value (case as RocketMQ's enum, any case
// accepted).
func ParseRole(s string) (Role, error) {
	for r, name := range roleNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Role(r), nil
		}
	}
	return 0, fmt.Errorf("%w %q: want ASYNC_MASTER, SYNC_MASTER or SLAVE", ErrBadRole, s)
}

// Config says what part a store plays and where.
type Config struct {
	Role Role
	// ListenAddr is a master's haListenPort address (host:port).
	ListenAddr string
	// MasterAddress is a slave's haMasterAddress; "" waits for
	// Service.SetMasterAddress (the address the name server returns).
	MasterAddress string
	Options
}

// Service is a store's replication, as its Role asks: a master's listener
// (and, for RoleSyncMaster, the wait of its puts) or a slave's client.
type Service struct {
	st     *store.MessageStore
	role   Role
	master *Master
	slave  *Slave
}

// Start starts the replication of st as cfg.Role says. A slave's store
// must take no puts of its own (the broker refuses sends on a slave).
func Start(st *store.MessageStore, cfg Config) (*Service, error) {
	s := &Service{st: st, role: cfg.Role}
	var err error
	switch cfg.Role {
	case RoleAsyncMaster, RoleSyncMaster:
		if s.master, err = NewMaster(st, cfg.ListenAddr, cfg.Options); err != nil {
			return nil, err
		}
		if cfg.Role == RoleSyncMaster {
			st.SetReplicaWaiter(s.master)
			s.master.log.Info("ha: SYNC_MASTER: puts wait for "+s.master.waitRule(), "inSyncReplicas", cfg.InSyncReplicas)
		}
	case RoleSlave:
		if s.slave, err = NewSlave(st, cfg.MasterAddress, cfg.Options); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %d", ErrBadRole, int(cfg.Role))
	}
	return s, nil
}

// Role is the role the service runs.
func (s *Service) Role() Role { return s.role }

// Master is the master side, nil on a slave.
func (s *Service) Master() *Master { return s.master }

// Slave is the slave side, nil on a master.
func (s *Service) Slave() *Slave { return s.slave }

// SetMasterAddress tells a slave its master's HA address (from the name
// server's answer to registration); a master ignores it.
func (s *Service) SetMasterAddress(addr string) {
	if s.slave != nil {
		s.slave.SetMasterAddress(addr)
	}
}

// Close stops replication; a RoleSyncMaster's puts stop waiting for a slave.
func (s *Service) Close() error {
	if s.master != nil {
		s.st.SetReplicaWaiter(nil)
		return s.master.Close()
	}
	return s.slave.Close()
}
