package ha

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/rocketstore/rocketstore/store"
)

var long = flag.Bool("long", false, "run the slave crash campaign with many more kill points")

// Environment of the slave child process (TestReplication_SlaveKilled_...).
const (
	slaveChildDirEnv    = "ROCKETSTORE_HA_SLAVE_CHILD_DIR"
	slaveChildMasterEnv = "ROCKETSTORE_HA_SLAVE_CHILD_MASTER"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(slaveChildDirEnv); dir != "" {
		slaveChild(dir, os.Getenv(slaveChildMasterEnv))
	}
	os.Exit(m.Run())
}

// slaveOptions are a slave's store options in the crash tests: SYNC_FLUSH,
// so that it acknowledges only what is on its disk, and its checkpoint's
// physicMsgTimestamp follows every flush.
func slaveOptions() store.Options {
	o := storeOptions()
	o.Replica = true
	o.FlushDiskType = store.SyncFlush
	return o
}

// slaveChild follows the master at masterAddr into the store in dir until
// it is killed.
func slaveChild(dir, masterAddr string) {
	st, err := store.Open(dir, slaveOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "slave child: open:", err)
		os.Exit(3)
	}
	if _, err := NewSlave(st, masterAddr, fastOptions(nil)); err != nil {
		fmt.Fprintln(os.Stderr, "slave child: follow:", err)
		os.Exit(4)
	}
	select {}
}
