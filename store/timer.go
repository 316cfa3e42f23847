package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/timer"
)

// Errors of timer messages, as RocketMQ's PutMessageStatus names them.
var (
	// ErrTimerIllegal refuses a timer message whose time cannot be read or
	// is further ahead than TimerMaxDelaySec (WHEEL_TIMER_MSG_ILLEGAL).
	ErrTimerIllegal = errors.New("store: timer message illegal")
	// ErrTimerNotEnabled refuses a timer message when the timer wheel is
	// off (WHEEL_TIMER_NOT_ENABLE).
	ErrTimerNotEnabled = errors.New("store: accurate timer message is not enabled")
)

// PropertyStartDeliverTime is the 4.x (Aliyun ONS) absolute delivery time
// in ms, __STARTDELIVERTIME: taken as TIMER_DELIVER_MS. Apache RocketMQ
// only counts it as a delayed message in its metrics.
const PropertyStartDeliverTime = "__STARTDELIVERTIME"

// Timer defaults (MessageStoreConfig).
const (
	defaultTimerPrecisionMs    = 1000
	defaultTimerMaxDelaySec    = 3 * 24 * 3600
	defaultTimerRollWindowSlot = 2 * 24 * 3600
	defaultTimerFlushInterval  = time.Second
	timerBlankSlots            = 60 // TIMER_BLANK_SLOTS
)

// timerDefaults fills in the timer options: the precision is rounded down
// to 100, 200, 500 or 1000 ms as setTimerPrecisionMs does, and a roll
// window outside [2, slots - 60] becomes slots - 60.
func (o *Options) timerDefaults() {
	switch p := o.TimerPrecisionMs; {
	case p == 0 || p >= 1000:
		o.TimerPrecisionMs = defaultTimerPrecisionMs
	case p >= 500:
		o.TimerPrecisionMs = 500
	case p >= 200:
		o.TimerPrecisionMs = 200
	default:
		o.TimerPrecisionMs = 100
	}
	if o.TimerMaxDelaySec == 0 {
		o.TimerMaxDelaySec = defaultTimerMaxDelaySec
	}
	if o.TimerRollWindowSlot == 0 {
		o.TimerRollWindowSlot = defaultTimerRollWindowSlot
	}
	if o.TimerRollWindowSlot < 2 || o.TimerRollWindowSlot > timer.SlotsTotal-timerBlankSlots {
		o.TimerRollWindowSlot = timer.SlotsTotal - timerBlankSlots
	}
	if o.TimerLogFileSize == 0 {
		o.TimerLogFileSize = timer.DefaultLogFileSize
	}
	if o.TimerFlushInterval == 0 {
		o.TimerFlushInterval = defaultTimerFlushInterval
	}
}

func (o Options) validateTimer() error {
	var errs []error
	if o.TimerMaxDelaySec < 0 {
		errs = append(errs, fmt.Errorf("TimerMaxDelaySec %d is negative", o.TimerMaxDelaySec))
	}
	if o.TimerLogFileSize < 0 || o.TimerLogFileSize%4096 != 0 {
		errs = append(errs, fmt.Errorf("TimerLogFileSize %d is not a positive multiple of 4096", o.TimerLogFileSize))
	}
	if o.TimerFlushInterval < 0 {
		errs = append(errs, fmt.Errorf("TimerFlushInterval %v is negative", o.TimerFlushInterval))
	}
	return errors.Join(errs...)
}

// nowMs is the store's clock in ms.
func (s *MessageStore) nowMs() int64 {
	if s.opts.Now != nil {
		return s.opts.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// timerProperties are the properties that make a timer message.
var timerProperties = [...]string{
	message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerDeliverMS,
	PropertyStartDeliverTime, message.PropertyDelayTimeLevel, message.PropertyTimerOutMS,
	message.PropertyTimerDelUniqKey,
}

// timerOwnProperties are the properties a timer message gets when it is
// parked.
var timerOwnProperties = [...]string{message.PropertyTimerOutMS, message.PropertyRealTopic, message.PropertyRealQueueID}

const (
	tpDelaySec = iota
	tpDelayMS
	tpDeliverMS
	tpStartDeliver
	tpDelayLevel
	tpOutMS
	tpDelUniqKey
)

// scheduleTimer rewrites a timer message, one with TIMER_DELIVER_MS,
// TIMER_DELAY_SEC, TIMER_DELAY_MS or __STARTDELIVERTIME in the future, to
// wait in rmq_sys_wheel_timer queue 0 until its time, rounded down to the
// precision (an exact multiple one precision earlier), in TIMER_OUT_MS,
// with its destination in REAL_TOPIC and REAL_QID (HookUtils
// .handleScheduleMessage and transformTimerMessage). A time already past
// leaves the message as it is. A message with a delay level keeps the
// level and loses its timer properties, as in RocketMQ.
func (s *MessageStore) scheduleTimer(m *message.Message) error {
	if m.Topic == message.TopicTimer || !strings.Contains(m.Properties, "TIMER_") && !strings.Contains(m.Properties, PropertyStartDeliverTime) ||
		strings.Contains(m.Properties, message.PropertyTimerOutMS) { // a delivery: quick, before the full look-up
		return nil
	}
	if tx := m.SysFlag & message.TxMask; tx == message.TxPrepared || tx == message.TxRollback {
		return nil
	}
	var vals [len(timerProperties)]string
	found := message.LookupProperties(m.Properties, timerProperties[:], vals[:])
	has := func(i int) bool { return found&(1<<i) != 0 }
	if !has(tpDelaySec) && !has(tpDelayMS) && !has(tpDeliverMS) && !has(tpStartDeliver) || has(tpOutMS) {
		return nil
	}
	if level, err := strconv.Atoi(vals[tpDelayLevel]); err == nil && level > 0 {
		props := message.ParseProperties(m.Properties)
		delete(props, message.PropertyTimerDeliverMS)
		delete(props, message.PropertyTimerDelaySec)
		delete(props, message.PropertyTimerDelayMS)
		m.Properties = message.EncodeProperties(props)
		return nil
	}
	if s.opts.DisableTimerWheel {
		return fmt.Errorf("store: put to %s: timerWheelEnable is false: %w", m.Topic, ErrTimerNotEnabled)
	}
	now := s.nowMs()
	var deliver int64
	var err error
	switch {
	case has(tpDelaySec):
		deliver, err = strconv.ParseInt(vals[tpDelaySec], 10, 64)
		deliver = now + deliver*1000
	case has(tpDelayMS):
		deliver, err = strconv.ParseInt(vals[tpDelayMS], 10, 64)
		deliver += now
	case has(tpDeliverMS):
		deliver, err = strconv.ParseInt(vals[tpDeliverMS], 10, 64)
	default:
		deliver, err = strconv.ParseInt(vals[tpStartDeliver], 10, 64)
	}
	if err != nil {
		return fmt.Errorf("store: put to %s: the delivery time cannot be read: %w: %w", m.Topic, ErrTimerIllegal, err)
	}
	if deliver <= now {
		if has(tpDelUniqKey) {
			return fmt.Errorf("store: put to %s: a timer delete must be in the future: %w", m.Topic, ErrTimerIllegal)
		}
		return nil // due already: an ordinary message
	}
	maxMs := int64(s.opts.TimerMaxDelaySec) * 1000
	if deliver-now > maxMs {
		return fmt.Errorf("store: put to %s: the delay %d ms is beyond the max delay %d ms (timerMaxDelaySec): %w",
			m.Topic, deliver-now, maxMs, ErrTimerIllegal)
	}
	prec := int64(s.opts.TimerPrecisionMs)
	if deliver%prec == 0 {
		deliver -= prec
	} else {
		deliver = deliver / prec * prec
	}
	// Later entries win: the three are appended, not merged (no map).
	var old [len(timerOwnProperties)]string
	b := appendPropertiesExcept(make([]byte, 0, len(m.Properties)+len(m.Topic)+48), m.Properties, timerOwnProperties[:], old[:])
	b = message.AppendProperty(b, message.PropertyTimerOutMS, strconv.FormatInt(deliver, 10))
	b = message.AppendProperty(b, message.PropertyRealTopic, m.Topic)
	b = message.AppendProperty(b, message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Properties = string(b)
	m.Topic, m.QueueID = message.TopicTimer, 0
	return nil
}
