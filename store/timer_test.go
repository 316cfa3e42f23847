package store

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

// fakeClock is a store clock tests move by hand.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(time.Now().UnixMilli() / 1000 * 1000)
	return c
}

func (c *fakeClock) now() time.Time           { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) add(d time.Duration)      { c.ms.Add(d.Milliseconds()) }
func (c *fakeClock) at(d time.Duration) int64 { return c.ms.Load() + d.Milliseconds() }

func timerOptions(c *fakeClock) Options {
	return Options{Now: c.now, TimerLogFileSize: 64 << 10, CommitLogFileSize: 1 << 20, DisableIndex: true}
}

// timerMessage is a message for topic/queue with a timer property.
func timerMessage(topic string, qid int32, body, name, value string) *message.Message {
	return &message.Message{
		Topic: topic, QueueID: qid, Body: []byte(body), BornTimestamp: time.Now().UnixMilli(),
		Properties: message.EncodeProperties(map[string]string{
			name: value, message.PropertyTags: "TagA", message.PropertyKeys: "k-" + body,
			message.PropertyUniqClientMessageIDKeyIndex: "ID-" + body, "user": "u-" + body,
		}),
	}
}

// waitRead waits until the timer has looked at every slot before ms.
func waitRead(t *testing.T, s *MessageStore, ms int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, _ := s.TimerStatus()
		return st.ReadTimeMs >= ms/1000*1000
	}, 10*time.Second, time.Millisecond, "the timer did not read up to %d", ms)
}

// queued returns the messages of topic/qid.
func queued(t *testing.T, s *MessageStore, topic string, qid int32) []*message.Message {
	t.Helper()
	var out []*message.Message
	for off := int64(0); ; {
		r := s.GetMessage("g", topic, qid, off, 32, nil)
		for _, sl := range r.Messages {
			rec, err := message.Parse(sl.Bytes())
			require.NoError(t, err)
			out = append(out, rec.Message())
		}
		next, n := r.NextBeginOffset, len(r.Messages)
		r.Release()
		if n == 0 {
			return out
		}
		off = next
	}
}

func TestTimer_DeliversAtItsTimeWithItsProperties(t *testing.T) {
	clock := newFakeClock()
	s, err := Open(t.TempDir(), timerOptions(clock))
	require.NoError(t, err)
	defer s.Close()

	due := clock.at(5 * time.Second)
	for i, p := range []struct{ name, value string }{
		{message.PropertyTimerDelaySec, "5"},
		{message.PropertyTimerDelayMS, "5000"},
		{message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)},
		{PropertyStartDeliverTime, strconv.FormatInt(due, 10)},
	} {
		res, err := s.PutMessage(timerMessage("T", 1, strconv.Itoa(i), p.name, p.value))
		require.NoError(t, err, p.name)
		require.Equal(t, PutOK, res.Status)
	}
	require.Empty(t, queued(t, s, "T", 1))
	require.Len(t, queued(t, s, message.TopicTimer, 0), 4)

	clock.add(4900 * time.Millisecond)
	waitRead(t, s, clock.at(0))
	require.Empty(t, queued(t, s, "T", 1), "delivered before its time")

	clock.add(100 * time.Millisecond)
	require.Eventually(t, func() bool { return len(queued(t, s, "T", 1)) == 4 }, 10*time.Second, time.Millisecond)
	for i, m := range queued(t, s, "T", 1) {
		p := message.ParseProperties(m.Properties)
		body := string(m.Body)
		require.Equal(t, "ID-"+body, p[message.PropertyUniqClientMessageIDKeyIndex], i)
		require.Equal(t, "k-"+body, p[message.PropertyKeys])
		require.Equal(t, "TagA", p[message.PropertyTags])
		require.Equal(t, "u-"+body, p["user"])
		require.Equal(t, strconv.FormatInt(due-1000, 10), p[message.PropertyTimerOutMS])
		require.NotEmpty(t, p[message.PropertyTimerEnqueueMS])
		require.NotEmpty(t, p[message.PropertyTimerDequeueMS])
		require.NotContains(t, p, message.PropertyRealTopic)
		require.NotContains(t, p, message.PropertyRealQueueID)
		require.Equal(t, "false", p[message.PropertyWaitStoreMsgOK])
	}
	st, _ := s.TimerStatus()
	require.EqualValues(t, 4, st.Delivered)
}

func TestTimer_RefusesBeyondMaxDelayAndStoresPastTimesAsIs(t *testing.T) {
	clock := newFakeClock()
	s, err := Open(t.TempDir(), timerOptions(clock))
	require.NoError(t, err)
	defer s.Close()

	_, err = s.PutMessage(timerMessage("T", 0, "far", message.PropertyTimerDelaySec, strconv.Itoa(3*24*3600+1)))
	require.ErrorIs(t, err, ErrTimerIllegal)
	_, err = s.PutMessage(timerMessage("T", 0, "bad", message.PropertyTimerDeliverMS, "soon"))
	require.ErrorIs(t, err, ErrTimerIllegal)
	_, err = s.PutMessage(timerMessage("T", 0, "max", message.PropertyTimerDelaySec, strconv.Itoa(3*24*3600)))
	require.NoError(t, err)

	res, err := s.PutMessage(timerMessage("T", 0, "past", message.PropertyTimerDeliverMS, strconv.FormatInt(clock.at(-time.Second), 10)))
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status)
	got := queued(t, s, "T", 0)
	require.Len(t, got, 1)
	require.Equal(t, "past", string(got[0].Body))

	offOpts := timerOptions(clock)
	offOpts.DisableTimerWheel = true
	off, err := Open(t.TempDir(), offOpts)
	require.NoError(t, err)
	defer off.Close()
	_, err = off.PutMessage(timerMessage("T", 0, "x", message.PropertyTimerDelaySec, "5"))
	require.True(t, errors.Is(err, ErrTimerNotEnabled), "%v", err)
}

func TestTimer_RollsTimersBeyondTheWindow(t *testing.T) {
	clock := newFakeClock()
	opts := timerOptions(clock)
	opts.TimerRollWindowSlot = 10
	s, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	defer s.Close()

	_, err = s.PutMessage(timerMessage("T", 2, "r", message.PropertyTimerDelaySec, "25"))
	require.NoError(t, err)
	due := clock.at(25 * time.Second)
	for clock.at(0) < due-1000 {
		clock.add(time.Second)
		waitRead(t, s, clock.at(0))
		require.Empty(t, queued(t, s, "T", 2), "delivered %d ms early", due-clock.at(0))
	}
	clock.add(time.Second)
	require.Eventually(t, func() bool { return len(queued(t, s, "T", 2)) == 1 }, 10*time.Second, time.Millisecond)
	p := message.ParseProperties(queued(t, s, "T", 2)[0].Properties)
	require.NotEmpty(t, p[message.PropertyTimerRollTimes])
	// The delivery is counted once its put returns, which may be after the
	// message shows in its queue.
	require.Eventually(t, func() bool { st, _ := s.TimerStatus(); return st.Delivered == 1 }, 10*time.Second, time.Millisecond)
	st, _ := s.TimerStatus()
	require.GreaterOrEqual(t, st.Rolled, int64(1))
	require.EqualValues(t, 1, st.Delivered)
}

func TestTimer_DeleteCancelsATimerOfItsSlot(t *testing.T) {
	clock := newFakeClock()
	s, err := Open(t.TempDir(), timerOptions(clock))
	require.NoError(t, err)
	defer s.Close()
	due := strconv.FormatInt(clock.at(3*time.Second), 10)
	for _, body := range []string{"keep", "cancel"} {
		_, err := s.PutMessage(timerMessage("T", 0, body, message.PropertyTimerDeliverMS, due))
		require.NoError(t, err)
	}
	del := timerMessage("T", 0, "del", message.PropertyTimerDeliverMS, due)
	del.Properties += string(message.AppendProperty(nil, message.PropertyTimerDelUniqKey, "T+ID-cancel"))
	_, err = s.PutMessage(del)
	require.NoError(t, err)
	past := timerMessage("T", 0, "late-del", message.PropertyTimerDeliverMS, strconv.FormatInt(clock.at(-time.Second), 10))
	past.Properties += string(message.AppendProperty(nil, message.PropertyTimerDelUniqKey, "T+ID-keep"))
	_, err = s.PutMessage(past)
	require.ErrorIs(t, err, ErrTimerIllegal, "a delete must be in the future")

	clock.add(4 * time.Second)
	waitRead(t, s, clock.at(0))
	require.Equal(t, map[string]int{"keep": 1}, delivered(t, s, "T", 0))
	st, _ := s.TimerStatus()
	require.EqualValues(t, 1, st.Deleted)
}
