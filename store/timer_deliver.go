package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/timer"
)

// deliverSlot delivers the slot at readTime and moves on to the next one
// (dequeue). It reports false when a put failed and the slot must be
// tried again.
func (t *timerService) deliverSlot() bool {
	if t.slotTime != t.readTime {
		t.slotTime, t.slotNext = t.readTime, 0
		t.slotPos, t.slotDeletes = t.slotPos[:0], nil
		slot := t.wheel.Slot(t.readTime)
		if !slot.Empty() {
			t.collect(slot)
		}
	}
	for ; t.slotNext < len(t.slotPos); t.slotNext++ {
		if t.slotNext%256 == 255 && t.stopping() {
			return false
		}
		if d, ok := t.prepare(t.slotPos[t.slotNext]); ok && !t.put(&d) {
			return false
		}
	}
	t.readTime += t.prec
	t.readTimeSnapshot.Store(t.readTime)
	t.slotTime = -1
	if len(t.slotPos) > 1<<16 {
		t.slotPos = nil // do not hold a burst's list for ever
	}
	if t.skip != nil && t.readTime > t.skipUntil {
		t.skip = nil
	}
	return true
}

// collect lists the units of a slot, oldest first, following the chain
// back from its newest unit.
func (t *timerService) collect(slot timer.Slot) {
	for pos := slot.LastPos; pos >= 0; {
		u, err := t.log.Read(pos)
		if err != nil {
			t.s.log.Error("timer slot chain broken; delivering what was read", "slot", slot.TimeMs, "pos", pos, "err", err)
			break
		}
		t.slotPos = append(t.slotPos, pos)
		if u.Magic&timer.MagicDelete != 0 && u.Magic&timer.MagicRoll == 0 {
			t.addDelete(u)
		}
		if u.PrevPos >= pos {
			t.s.log.Error("timer slot chain does not go back; delivering what was read", "slot", slot.TimeMs, "pos", pos)
			break
		}
		pos = u.PrevPos
	}
	for i, j := 0, len(t.slotPos)-1; i < j; i, j = i+1, j-1 {
		t.slotPos[i], t.slotPos[j] = t.slotPos[j], t.slotPos[i]
	}
}

// addDelete notes the timer a delete unit cancels: its TIMER_DEL_UNIQKEY,
// "{topic}+{UNIQ_KEY}" (buildDeleteKey). As in RocketMQ, a delete cancels
// only a timer of its own slot.
func (t *timerService) addDelete(u timer.Unit) {
	r, sl, err := t.s.cl.ReadRecord(u.CommitLogOffset)
	if err != nil {
		return
	}
	defer sl.Release()
	if key, ok := message.LookupProperty(bytesString(r.Properties()), message.PropertyTimerDelUniqKey); ok {
		if t.slotDeletes == nil {
			t.slotDeletes = map[string]struct{}{}
		}
		t.slotDeletes[strings.Clone(key)] = struct{}{}
	}
}

// delivery is a message ready to put: the record its body aliases stays
// held until done.
type delivery struct {
	out  *message.Message
	roll bool
	sl   mappedfile.Slice
}

// prepare reads the unit at pos and builds its delivery; false when there
// is nothing to put (a delete, a cancelled or already made delivery, or a
// message that cannot be read, logged). It only reads the timer's state,
// so it may run beside put.
func (t *timerService) prepare(pos int64) (delivery, bool) {
	u, err := t.log.Read(pos)
	if err != nil {
		t.stats.Dropped.Add(1)
		t.s.log.Error("dropping a timer unit that cannot be read", "pos", pos, "err", err)
		return delivery{}, false
	}
	roll := u.Magic&timer.MagicRoll != 0
	if u.Magic&timer.MagicDelete != 0 && !roll {
		return delivery{}, false // a delete is never delivered
	}
	r, sl, err := t.s.cl.ReadRecord(u.CommitLogOffset)
	if err != nil {
		t.stats.Dropped.Add(1)
		t.s.log.Error("dropping a timer message that cannot be read", "offset", u.CommitLogOffset, "err", err)
		return delivery{}, false
	}
	out, key, err := t.convert(u, r)
	if err != nil {
		sl.Release()
		t.stats.Dropped.Add(1)
		t.s.log.Error("dropping a timer message that cannot be read", "offset", u.CommitLogOffset, "err", err)
		return delivery{}, false
	}
	if t.slotDeletes != nil && !roll {
		uniq, _ := message.LookupProperty(out.Properties, message.PropertyUniqClientMessageIDKeyIndex)
		if _, deleted := t.slotDeletes[out.Topic+"+"+uniq]; deleted {
			sl.Release()
			t.stats.Deleted.Add(1)
			return delivery{}, false
		}
	}
	if t.skip != nil {
		if _, done := t.skip[key]; done {
			sl.Release()
			t.stats.Skipped.Add(1)
			return delivery{}, false
		}
	}
	return delivery{out: out, roll: roll, sl: sl}, true
}

// put puts a delivery into its topic (doPut) and releases its record. It
// reports false when the put failed in a way worth retrying.
func (t *timerService) put(d *delivery) bool {
	defer d.sl.Release()
	if _, err := t.s.PutMessage(d.out); err != nil {
		if retriable(err) {
			t.s.log.Warn("delivering a timer message failed; retrying", "topic", d.out.Topic, "err", err)
			return false
		}
		t.stats.Dropped.Add(1)
		t.s.log.Error("dropping a timer message the store refuses", "topic", d.out.Topic, "err", err)
		return true
	}
	if d.roll {
		t.stats.Rolled.Add(1)
	} else {
		t.stats.Delivered.Add(1)
	}
	return true
}

// retriable reports whether a refused put may succeed later.
func retriable(err error) bool {
	return errors.Is(err, ErrDiskFull) || errors.Is(err, ErrClosed) ||
		!(errors.Is(err, commitlog.ErrTooLarge) || errors.Is(err, message.ErrTooLarge) ||
			errors.Is(err, message.ErrBadTopic) || errors.Is(err, message.ErrBadProperties) ||
			errors.Is(err, ErrBadQueueID) || errors.Is(err, ErrTimerIllegal))
}

// convert builds the message a unit delivers from its record r, and its
// skip key. The message's body aliases r.
func (t *timerService) convert(u timer.Unit, r message.Record) (*message.Message, string, error) {
	if r.TotalSize() != u.Size {
		return nil, "", fmt.Errorf("the record at %d is %d bytes, the timer log says %d", u.CommitLogOffset, r.TotalSize(), u.Size)
	}
	props := bytesString(r.Properties())
	roll := u.Magic&timer.MagicRoll != 0
	var vals [len(deliveryDropped)]string
	b := appendPropertiesExcept(make([]byte, 0, len(props)+96), props, deliveryDropped[:], vals[:])
	b = appendPropertyInt(b, message.PropertyTimerEnqueueMS, u.WriteTimeMs)
	if roll {
		n, _ := strconv.Atoi(vals[ddRollTimes])
		b = appendPropertyInt(b, message.PropertyTimerRollTimes, int64(n+1))
	} else if vals[ddRollTimes] != "" {
		b = message.AppendProperty(b, message.PropertyTimerRollTimes, vals[ddRollTimes])
	}
	b = appendPropertyInt(b, message.PropertyTimerDequeueMS, t.s.nowMs())
	b = message.AppendProperty(b, message.PropertyWaitStoreMsgOK, "false")
	out := &message.Message{Topic: message.TopicTimer, QueueID: r.QueueID(), Flag: r.Flag(), Body: r.Body(), SysFlag: r.SysFlag(),
		BornTimestamp: r.BornTimestamp(), BornHost: r.BornHost(), ReconsumeTimes: r.ReconsumeTimes()}
	if roll {
		// Back to the timer topic: it keeps REAL_TOPIC and REAL_QID.
		b = message.AppendProperty(b, message.PropertyRealTopic, vals[ddRealTopic])
		b = message.AppendProperty(b, message.PropertyRealQueueID, vals[ddRealQueueID])
	} else {
		qid, err := strconv.Atoi(vals[ddRealQueueID])
		if vals[ddRealTopic] == "" || err != nil {
			return nil, "", fmt.Errorf("the timer message at %d has no REAL_TOPIC/REAL_QID", u.CommitLogOffset)
		}
		out.Topic, out.QueueID = t.realTopic(vals[ddRealTopic]), int32(qid)
	}
	out.Properties = bytesString(b) // b is this message's alone and not written again
	key := ""
	if t.skip != nil {
		uniq, _ := message.LookupProperty(out.Properties, message.PropertyUniqClientMessageIDKeyIndex)
		key = skipKey(out.Topic, uniq, u.WriteTimeMs, message.BodyCRC(out.Body))
	}
	return out, key, nil
}

// appendPropertyInt is message.AppendProperty of a decimal number,
// without formatting it into a string of its own.
func appendPropertyInt(b []byte, name string, n int64) []byte {
	b = append(b, name...)
	b = append(b, message.NameValueSeparator)
	b = strconv.AppendInt(b, n, 10)
	return append(b, message.PropertySeparator)
}

// realTopic is a copy of the REAL_TOPIC topic, which aliases a record: the
// last one is kept, as the timers of a burst often share their topic.
func (t *timerService) realTopic(topic string) string {
	if topic != t.lastRealTopic {
		t.lastRealTopic = strings.Clone(topic)
	}
	return t.lastRealTopic
}

// deliveryDropped are the properties a delivery sets anew or drops.
var deliveryDropped = [...]string{
	ddRealTopic: message.PropertyRealTopic, ddRealQueueID: message.PropertyRealQueueID,
	ddRollTimes: message.PropertyTimerRollTimes, ddEnqueue: message.PropertyTimerEnqueueMS,
	ddDequeue: message.PropertyTimerDequeueMS, ddWait: message.PropertyWaitStoreMsgOK,
}

const (
	ddRealTopic = iota
	ddRealQueueID
	ddRollTimes
	ddEnqueue
	ddDequeue
	ddWait
)

// skipKey names one delivery: its topic, message id, enqueue time and body.
func skipKey(topic, uniq string, enqueueMs int64, bodyCRC uint32) string {
	return topic + "\x00" + uniq + "\x00" + strconv.FormatInt(enqueueMs, 10) + "\x00" + strconv.FormatUint(uint64(bodyCRC), 10)
}
