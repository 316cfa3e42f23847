package namesrv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

func TestServer_NamesrvConfig_GetAndUpdate(t *testing.T) {
	_, addr := startNameServer(t, Options{})
	c := newClient(t)
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil))
	require.Equal(t, remoting.Success, resp.Code)
	require.Contains(t, string(resp.Body), "enableAllTopicList=true\n")
	require.Contains(t, string(resp.Body), "orderMessageEnable=false\n")
	require.Contains(t, string(resp.Body), "scanNotActiveBrokerInterval=5000\n")

	// Turning the topic list off takes effect at once.
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte("# tools\nenableAllTopicList=false\n")))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetAllTopicListFromNameServer, nil, nil))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "disable", resp.Remark)
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil))
	require.Contains(t, string(resp.Body), "enableAllTopicList=false\n")

	// Unknown keys, keys that need a restart, and bad values change nothing.
	for body, code := range map[string]int{
		"noSuchKey=1":                       remoting.InvalidParameter,
		"scanNotActiveBrokerInterval=100":   remoting.InvalidParameter,
		"enableAllTopicList=true\nnoSuch=1": remoting.InvalidParameter,
		"orderMessageEnable=maybe":          remoting.InvalidParameter,
		"no separator":                      remoting.SystemError,
	} {
		resp = invoke(t, c, addr, remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte(body)))
		require.Equal(t, code, resp.Code, body)
		require.NotEmpty(t, resp.Remark)
	}
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetAllTopicListFromNameServer, nil, nil))
	require.Equal(t, remoting.SystemError, resp.Code, "a refused update applied part of itself")
}

func TestServer_SystemAndUnitTopicLists(t *testing.T) {
	_, addr := startNameServer(t, Options{})
	c := newClient(t)
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.GetSystemTopicListFromNs, nil, nil))
	require.Equal(t, `{"topicList":[]}`, string(resp.Body))

	unit, unitSub, both := topic("U", 1, 6), topic("S", 1, 6), topic("US", 1, 6)
	unit.TopicSysFlag, unitSub.TopicSysFlag, both.TopicSysFlag = 1, 2, 3
	_, err := Register(ctxT(t), c, addr, registration("broker-a", "127.0.0.1:10911", 0, topics(1, unit, unitSub, both, topic("P", 1, 6))))
	require.NoError(t, err)

	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetSystemTopicListFromNs, nil, nil))
	require.Equal(t, `{"brokerAddr":"127.0.0.1:10911","topicList":["DefaultCluster","broker-a"]}`, string(resp.Body))
	for code, want := range map[int]string{
		remoting.GetUnitTopicList:             `{"topicList":["U","US"]}`,
		remoting.GetHasUnitSubTopicList:       `{"topicList":["S","US"]}`,
		remoting.GetHasUnitSubUnunitTopicList: `{"topicList":["S"]}`,
	} {
		resp = invoke(t, c, addr, remoting.NewRequest(code, nil, nil))
		require.Equal(t, remoting.Success, resp.Code)
		require.Equal(t, want, string(resp.Body), code)
	}
}
