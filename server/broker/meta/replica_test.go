package meta

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// A slave takes the master's offsets, except its own newer ones, which it
// keeps and returns until the master has them; the master takes those
// only forward.
func TestOffsets_MergeFromMaster_KeepsOwnNewer(t *testing.T) {
	dir := t.TempDir()
	master, err := OpenOffsets(filepath.Join(dir, "m.json"), nil)
	require.NoError(t, err)
	defer master.Close()
	slave, err := OpenOffsets(filepath.Join(dir, "s.json"), nil)
	require.NoError(t, err)
	defer slave.Close()

	master.Commit("cg", "T", 0, 10)
	master.Commit("cg", "T", 1, 20)
	ahead, err := slave.MergeFromMaster(master.EncodeAllJSON())
	require.NoError(t, err)
	require.Empty(t, ahead)
	require.Equal(t, map[int32]int64{0: 10, 1: 20}, slave.Table("cg", "T"))

	slave.CommitOwn("cg", "T", 0, 15) // a client's commit while the master is away
	slave.CommitOwn("cg", "T", 1, 18) // older than the master's: the master's wins
	slave.CommitOwn("cg", "U", 0, 5)  // a queue the master has no offset for
	ahead, err = slave.MergeFromMaster(master.EncodeAllJSON())
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{0: 15, 1: 20}, slave.Table("cg", "T"))
	require.Equal(t, []GroupOffsets{{Group: "cg", Topic: "T", Offsets: map[int32]int64{0: 15}},
		{Group: "cg", Topic: "U", Offsets: map[int32]int64{0: 5}}}, ahead)

	// Handed back: a newer commit by a client on the master stays.
	master.Commit("cg", "U", 0, 7)
	for _, g := range ahead {
		for q, off := range g.Offsets {
			master.CommitForward(g.Group, g.Topic, q, off)
		}
	}
	require.Equal(t, map[int32]int64{0: 15, 1: 20}, master.Table("cg", "T"))
	require.Equal(t, map[int32]int64{0: 7}, master.Table("cg", "U"))
	ahead, err = slave.MergeFromMaster(master.EncodeAllJSON())
	require.NoError(t, err)
	require.Empty(t, ahead, "the master has them all")
	require.Equal(t, map[int32]int64{0: 7}, slave.Table("cg", "U"))

	// Once forgotten, a master's reset to an earlier offset reaches the slave.
	master.Commit("cg", "T", 0, 3)
	_, err = slave.MergeFromMaster(master.EncodeAllJSON())
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{0: 3, 1: 20}, slave.Table("cg", "T"))

	_, err = slave.MergeFromMaster([]byte("{"))
	require.Error(t, err)
}

// A slave's topic and group tables become the master's when its data
// version differs, and stay when it is the same.
func TestReplaceFromMaster(t *testing.T) {
	dir := t.TempDir()
	mt, err := OpenTopics(filepath.Join(dir, "m", "topics.json"), TopicsOptions{})
	require.NoError(t, err)
	st, err := OpenTopics(filepath.Join(dir, "s", "topics.json"), TopicsOptions{})
	require.NoError(t, err)
	require.NoError(t, mt.Update(protocol.TopicConfig{TopicName: "OnMaster", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}))
	require.NoError(t, st.Update(protocol.TopicConfig{TopicName: "OnlyOnSlave", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}))
	changed, err := st.ReplaceFromMaster(mt.EncodeAllJSON())
	require.NoError(t, err)
	require.True(t, changed)
	c, ok := st.Get("OnMaster")
	require.True(t, ok)
	require.Equal(t, 2, c.ReadQueueNums)
	_, ok = st.Get("OnlyOnSlave")
	require.False(t, ok)
	require.Equal(t, mt.DataVersion(), st.DataVersion())
	changed, err = st.ReplaceFromMaster(mt.EncodeAllJSON())
	require.NoError(t, err)
	require.False(t, changed)
	reopened, err := OpenTopics(filepath.Join(dir, "s", "topics.json"), TopicsOptions{})
	require.NoError(t, err)
	_, ok = reopened.Get("OnMaster")
	require.True(t, ok, "persisted")
	_, err = st.ReplaceFromMaster([]byte(`{"topicConfigTable":{}}`))
	require.ErrorIs(t, err, ErrNoDataVersion)

	mg, err := OpenSubscriptionGroups(filepath.Join(dir, "m", "subscriptionGroup.json"), SubscriptionGroupsOptions{})
	require.NoError(t, err)
	sg, err := OpenSubscriptionGroups(filepath.Join(dir, "s", "subscriptionGroup.json"), SubscriptionGroupsOptions{})
	require.NoError(t, err)
	cfg := NewSubscriptionGroupConfig("cgMaster")
	cfg.RetryMaxTimes = 3
	require.NoError(t, mg.Update(cfg))
	changed, err = sg.ReplaceFromMaster(mg.EncodeAllJSON())
	require.NoError(t, err)
	require.True(t, changed)
	got, ok := sg.Get("cgMaster")
	require.True(t, ok)
	require.Equal(t, 3, got.RetryMaxTimes)
	require.Equal(t, mg.DataVersion(), sg.DataVersion())
}

// FuzzFromMaster: whatever a master answers, taking it errors or applies,
// never panics, and a table taken is one the slave can answer with again.
func FuzzFromMaster(f *testing.F) {
	f.Add([]byte(`{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1},"offsetTable":{"T@g":{0:5,1:-1}},` +
		`"topicConfigTable":{"T":{"perm":6,"readQueueNums":2,"writeQueueNums":2}},` +
		`"subscriptionGroupTable":{"g":{"groupName":"g"}},"forbiddenTable":{"g":{"T":1}}}`))
	f.Add([]byte(`{"offsetTable":{"nogroup":{0:1},"T@g":null},"topicConfigTable":{"T":null}}`))
	f.Add([]byte(`{"dataVersion":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		dir := t.TempDir()
		mem := vfs.NewCrashFS(1) // files in memory: the fuzzer runs fast
		o, err := OpenOffsets(filepath.Join(dir, "o.json"), nil)
		require.NoError(t, err)
		o.file.fs = mem
		defer o.Close()
		o.CommitOwn("g", "T", 0, 3)
		if _, err := o.MergeFromMaster(body); err == nil {
			_, err := o.MergeFromMaster(o.EncodeAllJSON())
			require.NoError(t, err)
		}
		topics, err := OpenTopics(filepath.Join(dir, "t.json"), TopicsOptions{})
		require.NoError(t, err)
		topics.p.setFS(mem)
		if _, err := topics.ReplaceFromMaster(body); err == nil {
			_, err := topics.ReplaceFromMaster(topics.EncodeAllJSON())
			require.NoError(t, err)
		}
		groups, err := OpenSubscriptionGroups(filepath.Join(dir, "g.json"), SubscriptionGroupsOptions{})
		require.NoError(t, err)
		groups.p.setFS(mem)
		if _, err := groups.ReplaceFromMaster(body); err == nil {
			_, err := groups.ReplaceFromMaster(groups.EncodeAllJSON())
			require.NoError(t, err)
		}
	})
}
