package meta

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

func openTopics(t *testing.T, path string, opts TopicsOptions) *Topics {
	t.Helper()
	tp, err := OpenTopics(path, opts)
	require.NoError(t, err)
	return tp
}

func newTopicsPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "config", "topics.json")
}

func TestOpenTopics_SystemTopics(t *testing.T) {
	tp := openTopics(t, newTopicsPath(t), TopicsOptions{BrokerName: "broker-a", ClusterName: "C1"})
	for _, tc := range []struct {
		name         string
		queues, perm int
	}{
		{"SELF_TEST_TOPIC", 1, 6},
		{"TBW102", 8, 7},
		{"BenchmarkTest", 1024, 6},
		{"C1", 16, 7},
		{"broker-a", 1, 7},
		{"OFFSET_MOVED_EVENT", 1, 6},
		{"SCHEDULE_TOPIC_XXXX", 18, 6},
		{"C1_REPLY_TOPIC", 1, 6},
		{"rmq_sys_REVIVE_LOG_C1", 8, 6},
		{"rmq_sys_SYNC_BROKER_MEMBER_broker-a", 1, 1},
		{"RMQ_SYS_TRANS_HALF_TOPIC", 1, 6},
		{"RMQ_SYS_TRANS_OP_HALF_TOPIC", 1, 6},
		{"rmq_sys_wheel_timer", 1, 6},
	} {
		c, ok := tp.Get(tc.name)
		require.True(t, ok, tc.name)
		require.Equal(t, tc.name, c.TopicName)
		require.Equal(t, tc.queues, c.ReadQueueNums, tc.name)
		require.Equal(t, tc.queues, c.WriteQueueNums, tc.name)
		require.Equal(t, tc.perm, c.Perm, tc.name)
		require.Equal(t, "SINGLE_TAG", c.TopicFilterType, tc.name)
	}
	require.Len(t, tp.All(), 13)
	require.Zero(t, tp.DataVersion().Counter)
	require.NoFileExists(t, tp.p.file.path, "opening writes nothing")
}

func TestOpenTopics_Defaults(t *testing.T) {
	tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
	for _, name := range []string{"DefaultCluster", "DEFAULT_BROKER", "DefaultCluster_REPLY_TOPIC"} {
		_, ok := tp.Get(name)
		require.True(t, ok, name)
	}
	tbw, _ := tp.Get("TBW102")
	require.Equal(t, 8, tbw.WriteQueueNums)

	tp = openTopics(t, newTopicsPath(t), TopicsOptions{DefaultTopicQueueNums: 3, DisableAutoCreateTopic: true})
	_, ok := tp.Get("TBW102")
	require.False(t, ok, "no TBW102 with auto-create off")
	require.Len(t, tp.All(), 12)
}

func TestOpenTopics_BadOptions(t *testing.T) {
	_, err := OpenTopics(newTopicsPath(t), TopicsOptions{DefaultTopicQueueNums: -1, BrokerPermission: 16})
	require.ErrorContains(t, err, "DefaultTopicQueueNums")
	require.ErrorContains(t, err, "BrokerPermission")
}

func TestTopics_CreateInSendMessage_InheritsFromTBW102(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	v0 := tp.DataVersion()

	c, created, err := tp.CreateInSendMessage("T4", "TBW102", 4, 0)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, protocol.TopicConfig{Attributes: map[string]string{}, Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4,
		TopicFilterType: "SINGLE_TAG", TopicName: "T4"}, c)
	require.Equal(t, v0.Counter+1, tp.DataVersion().Counter)

	c, created, err = tp.CreateInSendMessage("T16", "TBW102", 16, 3)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 8, c.ReadQueueNums, "min(client 16, TBW102's 8)")
	require.Equal(t, 8, c.WriteQueueNums)
	require.Equal(t, 3, c.TopicSysFlag)
	require.Zero(t, c.Perm&protocol.PermInherit)

	again, created, err := tp.CreateInSendMessage("T4", "TBW102", 2, 0)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 4, again.WriteQueueNums, "an existing topic is returned as is")
	require.Equal(t, v0.Counter+2, tp.DataVersion().Counter)

	back := openTopics(t, path, TopicsOptions{})
	got, ok := back.Get("T16")
	require.True(t, ok, "created topics are persisted at once")
	require.Equal(t, c, got)
	require.Equal(t, tp.DataVersion(), back.DataVersion())
}

func TestTopics_CreateInSendMessage_Refused(t *testing.T) {
	t.Run("auto-create off", func(t *testing.T) {
		tp := openTopics(t, newTopicsPath(t), TopicsOptions{DisableAutoCreateTopic: true})
		c, created, err := tp.CreateInSendMessage("T", "TBW102", 4, 0)
		require.NoError(t, err)
		require.False(t, created)
		require.Zero(t, c.TopicName)
		_, ok := tp.Get("T")
		require.False(t, ok)
	})
	t.Run("auto-create off, TBW102 left in the file", func(t *testing.T) {
		path := newTopicsPath(t)
		require.NoError(t, openTopics(t, path, TopicsOptions{}).Persist())
		tp := openTopics(t, path, TopicsOptions{DisableAutoCreateTopic: true})
		tbw, ok := tp.Get("TBW102")
		require.True(t, ok)
		require.Equal(t, 7, tbw.Perm)
		_, created, err := tp.CreateInSendMessage("T", "TBW102", 4, 0)
		require.NoError(t, err)
		require.False(t, created)
		_, ok = tp.Get("T")
		require.False(t, ok)
	})
	t.Run("default topic without the inherit bit", func(t *testing.T) {
		tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
		c, created, err := tp.CreateInSendMessage("T", "SELF_TEST_TOPIC", 4, 0)
		require.NoError(t, err)
		require.False(t, created)
		require.Zero(t, c.TopicName)
	})
	t.Run("default topic missing", func(t *testing.T) {
		tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
		_, created, err := tp.CreateInSendMessage("T", "NoSuchTopic", 4, 0)
		require.NoError(t, err)
		require.False(t, created)
		require.Zero(t, tp.DataVersion().Counter)
	})
}

func TestTopics_CreateInSendMessage_Concurrent_CreatesOnce(t *testing.T) {
	tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	creations := 0
	for range 8 {
		wg.Go(func() {
			_, created, err := tp.CreateInSendMessage("T", "TBW102", 4, 0)
			require.NoError(t, err)
			if created {
				mu.Lock()
				creations++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, creations)
	require.Equal(t, int64(1), tp.DataVersion().Counter)
}

func TestTopics_CreateInSendMessageBack_RetryTopic(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{DisableAutoCreateTopic: true})
	c, err := tp.CreateInSendMessageBack("%RETRY%cg", 1, 6, 0)
	require.NoError(t, err)
	require.Equal(t, protocol.TopicConfig{Attributes: map[string]string{}, Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1,
		TopicFilterType: "SINGLE_TAG", TopicName: "%RETRY%cg"}, c)
	require.Equal(t, int64(1), tp.DataVersion().Counter)

	same, err := tp.CreateInSendMessageBack("%RETRY%cg", 3, 2, 0)
	require.NoError(t, err)
	require.Equal(t, c, same)
	require.Equal(t, int64(1), tp.DataVersion().Counter)

	back := openTopics(t, path, TopicsOptions{})
	got, ok := back.Get("%RETRY%cg")
	require.True(t, ok)
	require.Equal(t, c, got)
}

func TestTopics_UpdateDelete_BumpVersionAndPersist(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	cfg := protocol.TopicConfig{TopicName: "Orders", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, Order: true,
		Attributes: map[string]string{"+message.type": "FIFO"}}
	require.NoError(t, tp.Update(cfg))
	v1 := tp.DataVersion()
	require.Equal(t, int64(1), v1.Counter)
	require.NotZero(t, v1.Timestamp)
	cfg.Attributes["+message.type"] = "changed by the caller"

	got, ok := openTopics(t, path, TopicsOptions{}).Get("Orders")
	require.True(t, ok)
	require.Equal(t, protocol.TopicConfig{TopicName: "Orders", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, Order: true,
		TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"+message.type": "FIFO"}}, got)

	cfg.WriteQueueNums = 8
	require.NoError(t, tp.Update(cfg))
	require.Equal(t, int64(2), tp.DataVersion().Counter)
	got, _ = openTopics(t, path, TopicsOptions{}).Get("Orders")
	require.Equal(t, 8, got.WriteQueueNums)

	require.NoError(t, tp.Delete("Orders"))
	require.Equal(t, int64(3), tp.DataVersion().Counter)
	_, ok = openTopics(t, path, TopicsOptions{}).Get("Orders")
	require.False(t, ok)
	require.Equal(t, int64(3), openTopics(t, path, TopicsOptions{}).DataVersion().Counter)

	require.NoError(t, tp.Delete("Orders"), "deleting a missing topic is no error")
	require.Equal(t, int64(3), tp.DataVersion().Counter, "and changes nothing")
}

func TestTopics_Update_Refuses(t *testing.T) {
	tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
	for _, cfg := range []protocol.TopicConfig{
		{TopicName: ""},
		{TopicName: "a b"},
		{TopicName: "a@b"},
		{TopicName: string(make([]byte, 128))},
	} {
		require.ErrorIs(t, tp.Update(cfg), ErrInvalidName, "%q", cfg.TopicName)
	}
	require.Error(t, tp.Update(protocol.TopicConfig{TopicName: "T", ReadQueueNums: -1}))
	require.Error(t, tp.Update(protocol.TopicConfig{TopicName: "T", Perm: 16}))
	require.Zero(t, tp.DataVersion().Counter)
}

func TestTopics_Reopen_ReadsEverythingBack(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{BrokerName: "b", ClusterName: "c"})
	_, _, err := tp.CreateInSendMessage("A", "TBW102", 4, 0)
	require.NoError(t, err)
	require.NoError(t, tp.Update(protocol.TopicConfig{TopicName: "B", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 2,
		TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Attributes: map[string]string{"k": "v \"q\""}}))
	require.NoError(t, tp.Persist())
	back := openTopics(t, path, TopicsOptions{BrokerName: "b", ClusterName: "c"})
	require.Equal(t, tp.All(), back.All())
	require.Equal(t, tp.DataVersion(), back.DataVersion())
}

func TestTopics_Wrapper(t *testing.T) {
	tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
	w := tp.Wrapper()
	require.Equal(t, tp.DataVersion(), w.DataVersion)
	require.Len(t, w.TopicConfigTable, 13)
	require.Equal(t, 7, w.TopicConfigTable["TBW102"].Perm)

	ro := openTopics(t, newTopicsPath(t), TopicsOptions{BrokerPermission: protocol.PermRead})
	w = ro.Wrapper()
	require.Equal(t, protocol.PermRead, w.TopicConfigTable["TBW102"].Perm, "7 & 4")
	require.Equal(t, 0, w.TopicConfigTable["rmq_sys_SYNC_BROKER_MEMBER_DEFAULT_BROKER"].Perm, "1 & 4")
	c, _ := ro.Get("TBW102")
	require.Equal(t, 7, c.Perm, "the stored perm is unchanged")

	require.NoError(t, ro.SetBrokerPermission(6))
	require.Equal(t, 7, ro.Wrapper().TopicConfigTable["TBW102"].Perm)
	require.Error(t, ro.SetBrokerPermission(0))
}

// smallTopics is a Topics with a table of one topic, for exact bytes.
func smallTopics(t *testing.T) *Topics {
	tp := openTopics(t, newTopicsPath(t), TopicsOptions{})
	tp.table = map[string]protocol.TopicConfig{"T": {Attributes: map[string]string{"b": "2", "a": "1"}, Perm: 6,
		ReadQueueNums: 8, WriteQueueNums: 4, TopicFilterType: "SINGLE_TAG", TopicName: "T"}}
	tp.version = protocol.DataVersion{Counter: 3, Timestamp: 1700000000000}
	return tp
}

func TestTopics_EncodeAllJSON_Exact(t *testing.T) {
	require.Equal(t, `{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},`+
		`"topicConfigTable":{"T":{"attributes":{"a":"1","b":"2"},"order":false,"perm":6,"readQueueNums":8,`+
		`"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}`,
		string(smallTopics(t).EncodeAllJSON()))
}

func TestTopics_Persist_ExactFile(t *testing.T) {
	tp := smallTopics(t)
	require.NoError(t, tp.Persist())
	require.Equal(t, "{\n"+
		"\t\"dataVersion\":{\n"+
		"\t\t\"counter\":3,\n"+
		"\t\t\"stateVersion\":0,\n"+
		"\t\t\"timestamp\":1700000000000\n"+
		"\t},\n"+
		"\t\"topicConfigTable\":{\n"+
		"\t\t\"T\":{\n"+
		"\t\t\t\"attributes\":{\n"+
		"\t\t\t\t\"a\":\"1\",\n"+
		"\t\t\t\t\"b\":\"2\"\n"+
		"\t\t\t},\n"+
		"\t\t\t\"order\":false,\n"+
		"\t\t\t\"perm\":6,\n"+
		"\t\t\t\"readQueueNums\":8,\n"+
		"\t\t\t\"topicFilterType\":\"SINGLE_TAG\",\n"+
		"\t\t\t\"topicName\":\"T\",\n"+
		"\t\t\t\"topicSysFlag\":0,\n"+
		"\t\t\t\"writeQueueNums\":4\n"+
		"\t\t}\n"+
		"\t}\n"+
		"}", readFile(t, tp.p.file.path))
}

func TestTopics_ReadsJavaFiles(t *testing.T) {
	t.Run("java 5", func(t *testing.T) {
		tp := openTopics(t, copyFixture(t, "java5", "topics.json"), TopicsOptions{BrokerName: "broker-a"})
		require.Equal(t, protocol.DataVersion{Counter: 7, Timestamp: 1726737000123}, tp.DataVersion())
		require.Len(t, tp.All(), 17)
		c, ok := tp.Get("OrderTopic")
		require.True(t, ok)
		require.Equal(t, protocol.TopicConfig{Attributes: map[string]string{}, Order: true, Perm: 6, ReadQueueNums: 8,
			WriteQueueNums: 8, TopicFilterType: "MULTI_TAG", TopicName: "OrderTopic", TopicSysFlag: 1}, c)
		c, _ = tp.Get("TopicTest")
		require.Equal(t, map[string]string{"+message.type": "NORMAL"}, c.Attributes)
		require.Equal(t, 4, c.WriteQueueNums)
	})
	t.Run("java 4", func(t *testing.T) {
		tp := openTopics(t, copyFixture(t, "java4", "topics.json"), TopicsOptions{})
		require.Equal(t, protocol.DataVersion{Counter: 3, Timestamp: 1528274066637}, tp.DataVersion())
		c, ok := tp.Get("Legacy")
		require.True(t, ok)
		require.Equal(t, protocol.TopicConfig{Perm: 6, ReadQueueNums: 16, WriteQueueNums: 16, TopicFilterType: "SINGLE_TAG",
			TopicName: "Legacy"}, c, "Java's defaults fill what the file leaves out")
		c, _ = tp.Get("TopicTest")
		require.Equal(t, 4, c.ReadQueueNums)
	})
	t.Run("standard JSON", func(t *testing.T) {
		tp := openTopics(t, copyFixture(t, "standard", "topics.json"), TopicsOptions{})
		require.Equal(t, int64(5), tp.DataVersion().Counter)
		c, ok := tp.Get("TopicTest")
		require.True(t, ok)
		require.Equal(t, 4, c.WriteQueueNums)
	})
}

// A Java 5 file read and written back says the same thing (fastjson's
// key order is a hash order, ours sorted, so the bytes differ).
func TestTopics_JavaFile_RoundTrip(t *testing.T) {
	path := copyFixture(t, "java5", "topics.json")
	want := decodeTopicsFile(t, readFile(t, path))
	require.NoError(t, openTopics(t, path, TopicsOptions{BrokerName: "broker-a"}).Persist())
	require.Equal(t, want, decodeTopicsFile(t, readFile(t, path)))
}

func decodeTopicsFile(t *testing.T, s string) protocol.TopicConfigSerializeWrapper {
	t.Helper()
	var w protocol.TopicConfigSerializeWrapper
	require.NoError(t, fastjson.Unmarshal([]byte(s), &w))
	return w
}

func TestOpenTopics_CorruptFileFallsBackToBak(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	require.NoError(t, tp.Update(protocol.TopicConfig{TopicName: "A", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}))
	require.NoError(t, tp.Persist())
	require.NoError(t, tp.Update(protocol.TopicConfig{TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}))
	require.NoError(t, tp.Persist())
	corrupt(t, path) // the journal belongs to the file as it was: it is ignored

	log, logs := testLogger()
	back := openTopics(t, path, TopicsOptions{Logger: log})
	_, okA := back.Get("A")
	_, okB := back.Get("B")
	require.True(t, okA)
	require.False(t, okB, "the .bak is one change behind")
	require.Equal(t, int64(1), back.DataVersion().Counter)
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "topics.json.bak")

	require.NoError(t, corruptFile(path+".bak"))
	_, err := OpenTopics(path, TopicsOptions{})
	require.ErrorIs(t, err, ErrCorrupt)
}

func corrupt(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, corruptFile(path))
}

func corruptFile(path string) error {
	return os.WriteFile(path, []byte(`{"topicConfigTable":{"X":{"perm":"six"`), 0o644)
}
