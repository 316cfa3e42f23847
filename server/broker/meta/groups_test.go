package meta

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
)

func openGroups(t *testing.T, path string, opts SubscriptionGroupsOptions) *SubscriptionGroups {
	t.Helper()
	g, err := OpenSubscriptionGroups(path, opts)
	require.NoError(t, err)
	return g
}

func newGroupsPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "config", "subscriptionGroup.json")
}

func TestOpenSubscriptionGroups_SystemGroups(t *testing.T) {
	g := openGroups(t, newGroupsPath(t), SubscriptionGroupsOptions{})
	for _, name := range []string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
		"CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS"} {
		c, ok := g.Get(name)
		require.True(t, ok, name)
		require.Equal(t, NewSubscriptionGroupConfig(name), c)
	}
	require.Len(t, g.All(), 8)
	require.Zero(t, g.DataVersion().Counter)
}

func TestSubscriptionGroups_FindOrCreate_Defaults(t *testing.T) {
	path := newGroupsPath(t)
	g := openGroups(t, path, SubscriptionGroupsOptions{})
	_, ok := g.Get("cg")
	require.False(t, ok)
	c, ok := g.FindOrCreate("cg")
	require.True(t, ok)
	require.Equal(t, SubscriptionGroupConfig{
		Attributes:                     map[string]string{},
		BrokerID:                       0,
		ConsumeBroadcastEnable:         true,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeMessageOrderly:          false,
		ConsumeTimeoutMinute:           15,
		GroupName:                      "cg",
		GroupRetryPolicy:               GroupRetryPolicy{Type: "CUSTOMIZED"},
		GroupSysFlag:                   0,
		NotifyConsumerIdsChangedEnable: true,
		RetryMaxTimes:                  16,
		RetryQueueNums:                 1,
		WhichBrokerWhenConsumeSlowly:   1,
	}, c)
	require.Equal(t, int64(1), g.DataVersion().Counter)
	again, ok := g.FindOrCreate("cg")
	require.True(t, ok)
	require.Equal(t, c, again)
	require.Equal(t, int64(1), g.DataVersion().Counter, "finding changes nothing")

	_, ok = openGroups(t, path, SubscriptionGroupsOptions{}).Get("cg")
	require.False(t, ok, "a created group is not waited for")
	require.NoError(t, g.Flush())
	back := openGroups(t, path, SubscriptionGroupsOptions{})
	got, ok := back.Get("cg")
	require.True(t, ok, "Flush writes created groups")
	require.Equal(t, c, got)
	require.Equal(t, g.DataVersion(), back.DataVersion())
}

func TestSubscriptionGroups_FindOrCreate_Refused(t *testing.T) {
	g := openGroups(t, newGroupsPath(t), SubscriptionGroupsOptions{DisableAutoCreateGroup: true})
	_, ok := g.FindOrCreate("cg")
	require.False(t, ok, "auto-create off")
	_, ok = g.FindOrCreate("CID_RMQ_SYS_X")
	require.True(t, ok, "system groups are made anyway")

	g = openGroups(t, newGroupsPath(t), SubscriptionGroupsOptions{})
	for _, name := range []string{"", "a b", "a@b", strings.Repeat("g", 121)} {
		_, ok := g.FindOrCreate(name)
		require.False(t, ok, "%q", name)
	}
	_, ok = g.FindOrCreate(strings.Repeat("g", 120))
	require.True(t, ok)
}

func TestSubscriptionGroups_UpdateDelete_BumpVersionAndPersist(t *testing.T) {
	path := newGroupsPath(t)
	g := openGroups(t, path, SubscriptionGroupsOptions{})
	cfg := NewSubscriptionGroupConfig("cg")
	cfg.RetryMaxTimes = 3
	cfg.ConsumeMessageOrderly = true
	cfg.Attributes["k"] = "v"
	cfg.GroupRetryPolicy = GroupRetryPolicy{Type: RetryPolicyExponential,
		ExponentialRetryPolicy: &ExponentialRetryPolicy{Initial: 1000, Max: 60000, Multiplier: 3}}
	cfg.SubscriptionDataSet = []SimpleSubscriptionData{{Expression: "*", ExpressionType: "TAG", Topic: "T", Version: 9}}
	require.NoError(t, g.Update(cfg))
	require.Equal(t, int64(1), g.DataVersion().Counter)
	stored, _ := g.Get("cg")
	cfg.Attributes["k"] = "changed by the caller"
	cfg.GroupRetryPolicy.ExponentialRetryPolicy.Max = 1
	require.Equal(t, "v", stored.Attributes["k"], "Update copies")
	require.Equal(t, int64(60000), stored.GroupRetryPolicy.ExponentialRetryPolicy.Max)

	got, ok := openGroups(t, path, SubscriptionGroupsOptions{}).Get("cg")
	require.True(t, ok)
	require.Equal(t, stored, got)

	require.NoError(t, g.Delete("cg"))
	require.Equal(t, int64(2), g.DataVersion().Counter)
	_, ok = openGroups(t, path, SubscriptionGroupsOptions{}).Get("cg")
	require.False(t, ok)
	require.NoError(t, g.Delete("cg"))
	require.Equal(t, int64(2), g.DataVersion().Counter)

	require.ErrorIs(t, g.Update(NewSubscriptionGroupConfig("a b")), ErrInvalidName)
}

func TestSubscriptionGroups_EncodeAllJSON_Exact(t *testing.T) {
	g := openGroups(t, newGroupsPath(t), SubscriptionGroupsOptions{})
	g.table = map[string]SubscriptionGroupConfig{"cg": NewSubscriptionGroupConfig("cg")}
	g.forbidden = map[string]map[string]int{"cg": {"T": 1}}
	g.version = protocol.DataVersion{Counter: 2, Timestamp: 1700000000000}
	// The same config fastjson 1.2.83 wrote for Java's SubscriptionGroupWrapper.
	require.Equal(t, `{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1700000000000},"forbiddenTable":{"cg":{"T":1}},`+
		`"subscriptionGroupTable":{"cg":{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,`+
		`"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"cg",`+
		`"groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,`+
		`"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}`, string(g.EncodeAllJSON()))
}

func TestSubscriptionGroups_ReadsJavaFiles(t *testing.T) {
	t.Run("java 5", func(t *testing.T) {
		path := copyFixture(t, "java5", "subscriptionGroup.json")
		g := openGroups(t, path, SubscriptionGroupsOptions{})
		require.Equal(t, protocol.DataVersion{Counter: 10, Timestamp: 1726737000789}, g.DataVersion())
		require.Len(t, g.All(), 10)
		c, ok := g.Get("order_cg")
		require.True(t, ok)
		want := NewSubscriptionGroupConfig("order_cg")
		want.ConsumeMessageOrderly = true
		want.ConsumeBroadcastEnable = false
		want.RetryMaxTimes = 3
		want.GroupRetryPolicy = GroupRetryPolicy{Type: "EXPONENTIAL",
			ExponentialRetryPolicy: &ExponentialRetryPolicy{Initial: 5000, Max: 7200000, Multiplier: 2}}
		want.SubscriptionDataSet = []SimpleSubscriptionData{{Expression: "TagA || TagB", ExpressionType: "TAG",
			Topic: "OrderTopic", Version: 1726737000000}}
		require.Equal(t, want, c)
		require.Equal(t, map[string]map[string]int{"order_cg": {"OrderTopic": 1}}, g.forbidden)

		// Written back, it reads the same.
		require.NoError(t, g.Persist())
		back := openGroups(t, path, SubscriptionGroupsOptions{})
		require.Equal(t, g.All(), back.All())
		require.Equal(t, g.forbidden, back.forbidden)
		require.Equal(t, g.DataVersion(), back.DataVersion())
	})
	t.Run("java 4", func(t *testing.T) {
		g := openGroups(t, copyFixture(t, "java4", "subscriptionGroup.json"), SubscriptionGroupsOptions{})
		c, ok := g.Get("slow_cg")
		require.True(t, ok)
		want := NewSubscriptionGroupConfig("slow_cg")
		want.ConsumeEnable = false
		want.ConsumeBroadcastEnable = false
		want.RetryMaxTimes = 5
		require.Equal(t, want, c, "5.x fields absent from a 4.x file get their defaults")
		require.Equal(t, int64(1), g.DataVersion().Counter)
	})
	t.Run("standard JSON", func(t *testing.T) {
		g := openGroups(t, copyFixture(t, "standard", "subscriptionGroup.json"), SubscriptionGroupsOptions{})
		c, ok := g.Get("cg")
		require.True(t, ok)
		require.Equal(t, 3, c.RetryMaxTimes)
		require.Equal(t, 15, c.ConsumeTimeoutMinute)
	})
}

func TestSubscriptionGroupConfig_UnmarshalJSON_RetryPolicyDefaults(t *testing.T) {
	var c SubscriptionGroupConfig
	require.NoError(t, c.UnmarshalJSON([]byte(`{"groupName":"g","groupRetryPolicy":{"customizedRetryPolicy":{},"exponentialRetryPolicy":{"max":9}}}`)))
	require.Equal(t, "CUSTOMIZED", c.GroupRetryPolicy.Type)
	require.Len(t, c.GroupRetryPolicy.CustomizedRetryPolicy.Next, 18)
	require.Equal(t, int64(7200000), c.GroupRetryPolicy.CustomizedRetryPolicy.Next[17])
	require.Equal(t, ExponentialRetryPolicy{Initial: 5000, Max: 9, Multiplier: 2}, *c.GroupRetryPolicy.ExponentialRetryPolicy)
}

func TestOpenSubscriptionGroups_CorruptFileFallsBackToBak(t *testing.T) {
	path := newGroupsPath(t)
	g := openGroups(t, path, SubscriptionGroupsOptions{})
	g.FindOrCreate("a")
	require.NoError(t, g.Persist())
	g.FindOrCreate("b")
	require.NoError(t, g.Persist())
	corrupt(t, path)
	log, logs := testLogger()
	back := openGroups(t, path, SubscriptionGroupsOptions{Logger: log})
	_, okA := back.Get("a")
	_, okB := back.Get("b")
	require.True(t, okA)
	require.False(t, okB)
	require.Contains(t, logs.String(), "subscriptionGroup.json.bak")
}
