package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Apache's storePathCommitLog (and our keys for the other parts) are
// applied; the keys that place data this broker does not keep where they
// say are refused, and so is a CommitLog spread over several folders.
func TestApplyProperties_StorePathKeys(t *testing.T) {
	o := applyKnown(t, `storePathRootDir=/data/store
storePathCommitLog=/disk2/commitlog
storePathConsumeQueue=/disk3/cq
storePathIndex=/disk3/index
storeCheckpoint=/disk3/checkpoint
abortFile=/disk3/abort
cleanFileForciblyEnable=false
`)
	require.True(t, o.Store.KeepUnexpiredFiles, "cleanFileForciblyEnable=false")
	require.Equal(t, "/disk2/commitlog", o.Store.Paths.CommitLog)
	require.Equal(t, "/disk3/cq", o.Store.Paths.ConsumeQueue)
	require.Equal(t, "/disk3/index", o.Store.Paths.Index)
	require.Equal(t, "/disk3/checkpoint", o.Store.Paths.Checkpoint)
	require.Equal(t, "/disk3/abort", o.Store.Paths.Abort)

	for _, conf := range []string{
		"storePathCommitLog=/a/commitlog,/b/commitlog",
		"storePathDLedgerCommitLog=/d/dledger",
		"readOnlyCommitLogStorePaths=/old/commitlog",
		"storePathEpochFile=/d/epochFileCheckpoint",
		"storePathBrokerIdentity=/d/brokerIdentity",
	} {
		props, err := parseProperties(strings.NewReader(conf))
		require.NoError(t, err)
		var o broker.Options
		_, err = applyProperties(&o, props)
		require.Error(t, err, conf)
		require.Contains(t, err.Error(), strings.SplitN(conf, "=", 2)[0], conf)
	}
}

// The built broker keeps its CommitLog where storePathCommitLog says,
// none of it under storePathRootDir, and finds it there after a restart;
// with a data-placing key it does not honour, it refuses to start.
func TestBinary_StorePathCommitLog(t *testing.T) {
	dir := t.TempDir()
	root, clDir := filepath.Join(dir, "root"), filepath.Join(dir, "disk2", "commitlog")
	conf := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(conf, []byte("storePathRootDir="+root+"\nstorePathCommitLog="+clDir+"\n"), 0o644))
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()

	run := func() {
		nsAddr, brokerAddr := freeAddr(t), freeAddr(t)
		p := startBrokerProc(t, "-c", conf, "-namesrv.listen", nsAddr, "-listen", brokerAddr)
		p.waitLine(t, "msg=ready", 30*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := sendOne(ctx, c, brokerAddr, "PathTopic")
		cancel()
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		p.terminate(t)
	}
	run()
	entries, err := os.ReadDir(clDir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the CommitLog is in storePathCommitLog")
	require.NoDirExists(t, filepath.Join(root, "commitlog"), "nothing of the CommitLog under storePathRootDir")
	require.DirExists(t, filepath.Join(root, "consumequeue"))
	run() // the restart finds its CommitLog (a put continues it)

	bad := filepath.Join(dir, "bad.conf")
	require.NoError(t, os.WriteFile(bad, []byte("storePathRootDir="+root+"\nstorePathEpochFile="+filepath.Join(dir, "epoch")+"\n"), 0o644))
	p := startBrokerProc(t, "-c", bad, "-namesrv.listen", freeAddr(t), "-listen", freeAddr(t))
	line, _ := p.waitLine(t, "storePathEpochFile", 30*time.Second)
	require.Contains(t, line, "refuses to start")
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker started with a data-placing key it does not honour")
	}
	require.NotEqual(t, 0, p.cmd.ProcessState.ExitCode())
}

// applyKnown applies the broker.conf text conf, which must hold only
// known keys, and returns the options.
func applyKnown(t *testing.T, conf string) broker.Options {
	t.Helper()
	props, err := parseProperties(strings.NewReader(conf))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Empty(t, unknown)
	return o
}

// terminate stops the broker with SIGTERM and checks it exits cleanly
// within 30 s.
func (p *brokerProc) terminate(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not stop on SIGTERM in 30 s")
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode())
}
