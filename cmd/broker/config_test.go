package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/store"
)

func TestApplyProperties_BrokerConf(t *testing.T) {
	conf := `# a RocketMQ broker.conf
brokerClusterName = DefaultCluster
brokerName = broker-b
brokerId = 0
listenPort=10921
namesrvAddr=10.0.0.1:9876;10.0.0.2:9876
storePathRootDir=/data/store
flushDiskType=SYNC_FLUSH
brokerRole = ASYNC_MASTER
deleteWhen=04
fileReservedTime=48
brokerIP1=192.168.0.5
autoCreateTopicEnable=false
mappedFileSizeCommitLog=1073741824
messageIndexEnable=true
maxHashSlotNum=50000
maxIndexNum=200000
maxMappedConsumeQueueFiles=5000
someFutureKey=1
`
	props, err := parseProperties(strings.NewReader(conf))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Equal(t, []string{"someFutureKey"}, unknown)
	require.Equal(t, "broker-b", o.BrokerName)
	require.Equal(t, "DefaultCluster", o.ClusterName)
	require.Equal(t, ":10921", o.ListenAddr)
	require.Equal(t, []string{"10.0.0.1:9876", "10.0.0.2:9876"}, o.NamesrvAddrs)
	require.Equal(t, "/data/store", o.StoreDir)
	require.Equal(t, store.SyncFlush, o.Store.FlushDiskType)
	require.Equal(t, 48*time.Hour, o.Store.FileReservedTime)
	require.Equal(t, "192.168.0.5", o.BrokerIP1)
	require.True(t, o.DisableAutoCreateTopic)
	require.Equal(t, 1<<30, o.Store.CommitLogFileSize)
	require.False(t, o.Store.DisableIndex)
	require.Equal(t, 50000, o.Store.IndexHashSlots, "maxHashSlotNum")
	require.Equal(t, 200000, o.Store.IndexMaxEntries, "maxIndexNum")
	require.Equal(t, 5000, o.Store.MaxMappedConsumeQueueFiles, "maxMappedConsumeQueueFiles")
}

func TestApplyProperties_Errors(t *testing.T) {
	for _, conf := range []string{"brokerId=x", "flushDiskType=SOMETIMES", "brokerRole=MASTER", "autoCreateTopicEnable=maybe", "haListenPort=x"} {
		props, err := parseProperties(strings.NewReader(conf))
		require.NoError(t, err)
		var o broker.Options
		_, err = applyProperties(&o, props)
		require.Error(t, err, conf)
	}
	_, err := parseProperties(strings.NewReader("no separator here"))
	require.Error(t, err)
}

func TestApplyProperties_Trace(t *testing.T) {
	props, err := parseProperties(strings.NewReader("traceTopicEnable=true\nmsgTraceTopicName=MyTrace\n"))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.True(t, o.TraceTopicEnable)
	require.Equal(t, "MyTrace", o.MsgTraceTopicName)
}

func TestApplyProperties_Replication(t *testing.T) {
	conf := `brokerId=1
brokerRole=SLAVE
haListenPort=30912
haMasterAddress=10.0.0.1:10912
haSendHeartbeatInterval=1000
haHousekeepingInterval=10000
haTransferBatchSize=65536
haMaxGapNotInSync=1048576
slaveTimeout=2000
haReconnectInterval=250
slaveReadEnable=true
accessMessageInMemoryMaxRatio=30
`
	o := applyKnown(t, conf)
	require.Equal(t, int64(1), o.BrokerID)
	require.Equal(t, ha.RoleSlave, o.BrokerRole)
	require.Equal(t, 30912, o.HAListenPort)
	require.Equal(t, "10.0.0.1:10912", o.HAMasterAddress)
	require.Equal(t, time.Second, o.HA.HeartbeatInterval)
	require.Equal(t, 10*time.Second, o.HA.HousekeepingInterval)
	require.Equal(t, 65536, o.HA.TransferBatchSize)
	require.Equal(t, int64(1<<20), o.HA.MaxGapNotInSync)
	require.Equal(t, 2*time.Second, o.HA.SlaveTimeout)
	require.Equal(t, 250*time.Millisecond, o.HA.ReconnectInterval)
	require.True(t, o.SlaveReadEnable)
	require.Equal(t, 30, o.Store.AccessMessageInMemoryMaxRatio)
	for v, want := range map[string]int{"0": 1, "1": 1, "3": 3} { // 0 and 1: no wait, as Apache 5
		props, err := parseProperties(strings.NewReader("brokerRole=SYNC_MASTER\ninSyncReplicas=" + v))
		require.NoError(t, err)
		var o broker.Options
		_, err = applyProperties(&o, props)
		require.NoError(t, err)
		require.Equal(t, want, o.HA.InSyncReplicas, "inSyncReplicas=%s", v)
	}
	var unset broker.Options
	_, err := applyProperties(&unset, map[string]string{"brokerRole": "SYNC_MASTER"})
	require.NoError(t, err)
	require.Zero(t, unset.HA.InSyncReplicas, "unset: RocketMQ 4.x's wait for one slave")
	_, err = applyProperties(&unset, map[string]string{"inSyncReplicas": "-1"})
	require.ErrorContains(t, err, "inSyncReplicas")
	inert, err := applyProperties(&unset, map[string]string{"minInSyncReplicas": "2", "enableAutoInSyncReplicas": "true"})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"minInSyncReplicas", "enableAutoInSyncReplicas"}, inert, "checked, not applied")
	for _, k := range inert {
		require.Contains(t, inertKeys, k)
	}
	_, err = applyProperties(&unset, map[string]string{"minInSyncReplicas": "two", "enableAutoInSyncReplicas": "yes please"})
	require.ErrorContains(t, err, "minInSyncReplicas")
	require.ErrorContains(t, err, "enableAutoInSyncReplicas")
	for _, role := range []string{"ASYNC_MASTER", "SYNC_MASTER"} {
		props, err := parseProperties(strings.NewReader("brokerRole=" + role))
		require.NoError(t, err)
		var o broker.Options
		_, err = applyProperties(&o, props)
		require.NoError(t, err)
		require.Equal(t, role, o.BrokerRole.String())
	}
}

func TestApplyProperties_TimerKeys(t *testing.T) {
	o := applyKnown(t, `timerWheelEnable=false
timerPrecisionMs=500
timerMaxDelaySec=3600
timerRollWindowSlot=7200
mappedFileSizeTimerLog=1048576
timerFlushIntervalMs=200
`)
	require.True(t, o.Store.DisableTimerWheel)
	require.Equal(t, 500, o.Store.TimerPrecisionMs)
	require.Equal(t, 3600, o.Store.TimerMaxDelaySec)
	require.Equal(t, 7200, o.Store.TimerRollWindowSlot)
	require.Equal(t, 1<<20, o.Store.TimerLogFileSize)
	require.Equal(t, 200*time.Millisecond, o.Store.TimerFlushInterval)
}

func TestApplyProperties_RepairCommitLog(t *testing.T) {
	var o broker.Options
	unknown, err := applyProperties(&o, map[string]string{"repairCommitLog": "true"})
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.True(t, o.Store.RepairCommitLog)
}

func TestApplyProperties_Registration(t *testing.T) {
	props, err := parseProperties(strings.NewReader("compressedRegister=true\nenableSplitRegistration=true\nsplitRegistrationSize=500\nforceRegister=false\n"))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.True(t, o.CompressedRegister)
	require.True(t, o.EnableSplitRegistration)
	require.Equal(t, 500, o.SplitRegistrationSize)
	require.True(t, o.DisableForceRegister)
}

func TestApplyProperties_MetricsQueueSeriesLimit(t *testing.T) {
	props, err := parseProperties(strings.NewReader("metricsQueueSeriesLimit=-1\n"))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.Equal(t, -1, o.MetricsQueueSeriesLimit)
}
