package ha

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/store"
)

func TestParseRole(t *testing.T) {
	for _, r := range []Role{RoleAsyncMaster, RoleSyncMaster, RoleSlave} {
		got, err := ParseRole(r.String())
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	got, err := ParseRole(" sync_master ")
	require.NoError(t, err)
	require.Equal(t, RoleSyncMaster, got)
	_, err = ParseRole("MASTER")
	require.ErrorIs(t, err, ErrBadRole)
}

func TestStart_SyncMasterAndSlave(t *testing.T) {
	ms := openStore(t, t.TempDir())
	master, err := Start(ms, Config{Role: RoleSyncMaster, ListenAddr: "127.0.0.1:0", Options: fastOptions(nil)})
	require.NoError(t, err)
	ss := openStore(t, t.TempDir())
	slow := fastOptions(nil)
	slow.ReconnectInterval = time.Hour // a new address is tried at once, not after this
	slave, err := Start(ss, Config{Role: RoleSlave, Options: slow})
	require.NoError(t, err)
	slave.SetMasterAddress(master.Master().Addr().String()) // as from the name server
	waitFor(t, 5*time.Second, "the slave", func() bool { return master.Master().Slaves() == 1 })
	res, _ := putStatus(t, ms, 0)
	require.Equal(t, store.PutOK, res.Status)
	require.GreaterOrEqual(t, ss.ReplicaOffset(), res.WroteOffset+int64(res.WroteBytes))
	require.NoError(t, slave.Close())
	require.NoError(t, master.Close())
	res, _ = putStatus(t, ms, 1)
	require.Equal(t, store.PutOK, res.Status, "a closed service no longer holds puts")
}
