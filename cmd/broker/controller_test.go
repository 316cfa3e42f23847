package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
)

// Apache's controller-mode sample keys: read, the store paths accepted
// only in controller mode, brokerId=-1 and brokerRole=SLAVE taken without
// complaint (the controllers assign both).
func TestControllerKeys(t *testing.T) {
	conf := "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=-1\nbrokerRole=SLAVE\n" +
		"enableControllerMode=true\ncontrollerAddr=127.0.0.1:9878;127.0.0.1:9868; 127.0.0.1:9858\n" +
		"allAckInSyncStateSet=false\nsyncBrokerMetadataPeriod=500\ncontrollerHeartBeatTimeoutMills=3000\n" +
		"brokerElectionPriority=2\nstorePathEpochFile=/d/epoch\nstorePathBrokerIdentity=/d/identity\n"
	props, err := parseProperties(strings.NewReader(conf))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	for _, k := range unknown {
		require.True(t, controllerKeys[k], "%s taken for unknown", k)
	}
	c, err := readControllerConfig(props)
	require.NoError(t, err)
	require.Equal(t, controllerConfig{enabled: true, addrs: []string{"127.0.0.1:9878", "127.0.0.1:9868", "127.0.0.1:9858"},
		allAck: false, syncPeriod: 500 * time.Millisecond, hbTimeout: 3 * time.Second, hbInterval: time.Second,
		checkSSS: 5 * time.Second, priority: 2, epochFile: "/d/epoch", identityFile: "/d/identity"}, c)

	for _, bad := range []string{"enableControllerMode=true\n", "enableControllerMode=true\ncontrollerAddr=a:1\nsyncBrokerMetadataPeriod=x\n",
		"enableControllerMode=true\ncontrollerAddr=a:1\nallAckInSyncStateSet=maybe\n"} {
		props, err := parseProperties(strings.NewReader(bad))
		require.NoError(t, err)
		_, err = readControllerConfig(props)
		require.Error(t, err, bad)
	}
	// Without controller mode the keys are off and the paths refused.
	props, err = parseProperties(strings.NewReader("storePathEpochFile=/d/epoch\n"))
	require.NoError(t, err)
	c, err = readControllerConfig(props)
	require.NoError(t, err)
	require.False(t, c.enabled)
	_, err = applyProperties(&o, props)
	require.ErrorContains(t, err, "storePathEpochFile")
}
