package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/message"
)

// DefaultMessageDelayLevel is RocketMQ's messageDelayLevel: the delays of
// levels 1..18.
const DefaultMessageDelayLevel = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// parseDelayLevels reads a messageDelayLevel list: durations with the units
// ms, s, m, h and d, separated by spaces.
func parseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for f := range strings.FieldsSeq(s) {
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
		num := strings.TrimRight(f, "smhd")
		u, ok := unit[f[len(num):]]
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n <= 0 {
			return nil, fmt.Errorf("MessageDelayLevel %q: %q is not a delay such as 5s or 2m", s, f)
		}
		out = append(out, time.Duration(n)*u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("MessageDelayLevel %q has no levels", s)
	}
	return out, nil
}

// scheduleDelay rewrites a message that asks for a delay level (DELAY > 0)
// to wait in SCHEDULE_TOPIC_XXXX, queue level-1, with its destination kept
// in REAL_TOPIC and REAL_QID (RocketMQ's HookUtils / CommitLog.putMessage).
// Transaction PREPARED and ROLLBACK records are not delayed.
// delay is m's DELAY property; it reports whether it rewrote m.
func (s *MessageStore) scheduleDelay(m *message.Message, delay string) bool {
	if tx := m.SysFlag & message.TxMask; tx == message.TxPrepared || tx == message.TxRollback {
		return false
	}
	level, err := strconv.Atoi(delay)
	if err != nil || level <= 0 {
		return false
	}
	level = min(level, len(s.delays))
	props := message.ParseProperties(m.Properties)
	props[message.PropertyDelayTimeLevel] = strconv.Itoa(level)
	props[message.PropertyRealTopic] = m.Topic
	props[message.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Properties = message.EncodeProperties(props)
	m.Topic, m.QueueID = message.TopicSchedule, int32(level-1)
	return true
}

// deliverAt is the ConsumeQueue tags code of a SCHEDULE_TOPIC_XXXX record:
// when it is due, in ms.
func deliverAt(delays []time.Duration, delayLevel string, storeTimestamp int64) (int64, bool) {
	level, err := strconv.Atoi(delayLevel)
	if err != nil || level <= 0 {
		return 0, false
	}
	if level > len(delays) {
		return storeTimestamp + 1000, true // unknown level: as RocketMQ
	}
	return storeTimestamp + delays[level-1].Milliseconds(), true
}

// scheduler is RocketMQ's ScheduleMessageService: for each delay level it
// follows its queue of SCHEDULE_TOPIC_XXXX and, when a message is due,
// puts it again into its real topic and queue.
type scheduler struct {
	s    *MessageStore
	path string // {store}/config/delayOffset.json

	mu      sync.Mutex // guards offsets
	offsets map[int]int64
}

// scheduleInterval is how often due messages are looked for (RocketMQ
// rechecks a level 100 ms after finding it not yet due).
const scheduleInterval = 100 * time.Millisecond

func newScheduler(s *MessageStore) (*scheduler, error) {
	sc := &scheduler{s: s, path: filepath.Join(s.dir, "config", "delayOffset.json"), offsets: map[int]int64{}}
	raw, err := os.ReadFile(sc.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		var f struct {
			OffsetTable map[int]int64 `json:"offsetTable"`
		}
		if err := fastjson.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.path, err)
		}
		for k, v := range f.OffsetTable {
			sc.offsets[k] = v
		}
	}
	return sc, nil
}

func (sc *scheduler) loop() {
	t := time.NewTicker(scheduleInterval)
	defer t.Stop()
	persist := time.NewTicker(10 * time.Second) // flushDelayOffsetInterval
	defer persist.Stop()
	for {
		select {
		case <-sc.s.stop:
			return
		case <-persist.C:
			if err := sc.persist(); err != nil {
				sc.s.log.Error("saving delay offsets failed", "err", err)
			}
		case <-t.C:
			for level := 1; level <= len(sc.s.delays); level++ {
				sc.deliver(level)
			}
		}
	}
}

// deliver puts every due message of a level into its real topic.
func (sc *scheduler) deliver(level int) {
	q := sc.s.cqs.Get(message.TopicSchedule, int32(level-1))
	if q == nil {
		return
	}
	sc.mu.Lock()
	off := max(sc.offsets[level], q.MinOffset())
	sc.mu.Unlock()
	now := time.Now().UnixMilli()
	if sc.s.opts.Now != nil {
		now = sc.s.opts.Now().UnixMilli()
	}
	for ; off < q.MaxOffset(); off++ {
		u, ok := q.Unit(off)
		if !ok || u.TagsCode > now {
			break
		}
		if err := sc.redeliver(u.Offset); err != nil {
			sc.s.log.Warn("delivering a delayed message failed; retrying later", "level", level, "offset", u.Offset, "err", err)
			break
		}
	}
	sc.mu.Lock()
	sc.offsets[level] = off
	sc.mu.Unlock()
}

// redeliver puts the delayed record at a CommitLog offset into its real
// topic and queue, without DELAY and the timer properties.
func (sc *scheduler) redeliver(phyOffset int64) error {
	r, sl, err := sc.s.cl.ReadRecord(phyOffset)
	if err != nil {
		return err
	}
	m := r.Message()
	sl.Release()
	props := message.ParseProperties(m.Properties)
	topic, qid := props[message.PropertyRealTopic], props[message.PropertyRealQueueID]
	id, err := strconv.Atoi(qid)
	if topic == "" || err != nil {
		sc.s.log.Warn("dropping a delayed message without its real topic", "offset", phyOffset)
		return nil
	}
	for _, k := range []string{message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		delete(props, k)
	}
	props[message.PropertyWaitStoreMsgOK] = "false"
	out := &message.Message{
		Topic:          topic,
		QueueID:        int32(id),
		Flag:           m.Flag,
		Body:           m.Body,
		Properties:     message.EncodeProperties(props),
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes,
	}
	_, err = sc.s.PutMessage(out)
	return err
}

// persist writes the offsets to config/delayOffset.json in RocketMQ's form
// ({"offsetTable":{1:N,...}}), durably.
func (sc *scheduler) persist() error {
	sc.mu.Lock()
	levels := make([]int, 0, len(sc.offsets))
	for l := range sc.offsets {
		levels = append(levels, l)
	}
	w := fastjson.NewWriter(nil, true)
	w.BeginObject()
	w.Key("offsetTable")
	w.BeginIntMap()
	slices.Sort(levels)
	for _, l := range levels {
		w.IntKey(int64(l))
		w.Int(sc.offsets[l])
	}
	w.End()
	w.End()
	sc.mu.Unlock()
	if err := vfs.WriteFile(vfs.OS{}, sc.path, w.Bytes()); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
