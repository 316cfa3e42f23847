package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

func delayedMsg(topic, body string, level string) *message.Message {
	m := msg(topic, 2, body, "TagD", "dk-"+body)
	m.Properties = string(message.AppendProperty([]byte(m.Properties), message.PropertyDelayTimeLevel, level))
	return m
}

func TestStore_DelayLevels(t *testing.T) {
	opts := smallOptions()
	opts.MessageDelayLevel = "100ms 400ms"
	dir := t.TempDir()
	s := openTestStore(t, dir, opts)

	start := time.Now()
	res := mustPut(t, s, delayedMsg("TopicD", "late", "2"))
	require.Equal(t, int64(0), res.QueueOffset)
	mustPut(t, s, delayedMsg("TopicD", "clamped", "99")) // beyond the last level: the last
	waitDispatched(t, s)
	require.Equal(t, int64(0), s.GetMaxOffsetInQueue("TopicD", 2), "not delivered yet")
	require.Equal(t, int64(2), s.GetMaxOffsetInQueue(message.TopicSchedule, 1), "parked at level 2, queue 1")
	u, ok := s.cqs.Get(message.TopicSchedule, 1).Unit(0)
	require.True(t, ok)
	r, sl, err := s.LookMessageByOffset(u.Offset)
	require.NoError(t, err)
	require.Equal(t, r.StoreTimestamp()+400, u.TagsCode, "the unit's tags code is the due time")
	sl.Release()

	require.Eventually(t, func() bool { return s.GetMaxOffsetInQueue("TopicD", 2) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "not before its delay")
	got := s.GetMessage("g", "TopicD", 2, 0, 8, nil)
	require.Equal(t, Found, got.Status)
	for i, sl := range got.Messages {
		rec, err := message.Parse(sl.Bytes())
		require.NoError(t, err)
		require.Equal(t, []string{"late", "clamped"}[i], string(rec.Body()))
		_, has := message.LookupProperty(rec.Properties(), message.PropertyDelayTimeLevel)
		require.False(t, has, "DELAY is gone")
		tags, _ := message.LookupProperty(string(rec.Properties()), message.PropertyTags)
		require.Equal(t, "TagD", tags)
	}
	got.Release()
	q, err := s.QueryMessage("TopicD", "dk-late", 4, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Messages, 1, "found by key in its real topic")
	q.Release()

	_, err = s.PutMessages([]*message.Message{delayedMsg("TopicD", "b", "1")})
	require.ErrorIs(t, err, ErrDelayedBatch)

	require.NoError(t, s.Close())
	raw, err := os.ReadFile(filepath.Join(dir, "config", "delayOffset.json"))
	require.NoError(t, err)
	require.Contains(t, string(raw), "2:2", "level 2 delivered up to offset 2, fastjson form")
	s2 := openTestStore(t, dir, opts)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, int64(2), s2.GetMaxOffsetInQueue("TopicD", 2), "nothing delivered twice after a restart")
}

func TestParseDelayLevels(t *testing.T) {
	d, err := parseDelayLevels(DefaultMessageDelayLevel)
	require.NoError(t, err)
	require.Len(t, d, 18)
	require.Equal(t, time.Second, d[0])
	require.Equal(t, 2*time.Hour, d[17])
	for _, bad := range []string{"", "5x", "0s", "-1s", "s"} {
		_, err := parseDelayLevels(bad)
		require.Error(t, err, bad)
	}
}
