package broker

import (
	"fmt"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// The send header (SendMessageRequestHeader and its V2 form) is read
// field by field from the request's ext fields as they came on the wire
// (remoting's raw ext fields), without a map or a string per field: it is
// read for every message sent.

// Fields of a send header, in the order of SendMessageRequestHeaderV2's
// letters: field i is letter 'a'+i.
const (
	sfProducerGroup = iota
	sfTopic
	sfDefaultTopic
	sfDefaultTopicQueueNums
	sfQueueID
	sfSysFlag
	sfBornTimestamp
	sfFlag
	sfProperties
	sfReconsumeTimes
	sfUnitMode
	sfMaxReconsumeTimes
	sfBatch
	sfBname
	sendFieldCount
)

// sendFieldNames are the long names of the fields (SEND_MESSAGE's keys).
var sendFieldNames = [sendFieldCount]string{
	"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
	"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname",
}

// sendRequestHeader is a decoded send header.
type sendRequestHeader struct {
	topic, defaultTopic string
	// properties is the properties' text; it aliases the buffer given to
	// decodeSendHeader.
	properties                        []byte
	queueID, sysFlag, flag            int32
	reconsumeTimes, maxReconsumeTimes int32
	defaultTopicQueueNums             int32
	bornTimestamp                     int64

	set   [sendFieldCount]bool // present and not null
	blank [sendFieldCount]bool // present as "": an integer field takes its default
	ints  [sendFieldCount]int64
	bad   [sendFieldCount][]byte // the text of a field that is not an integer
}

// sendFieldIndex returns the field a key names: a letter of V2 (short), or
// a long name.
func sendFieldIndex(key []byte, short bool) (int, bool) {
	if short {
		if len(key) == 1 && key[0] >= 'a' && key[0] < 'a'+sendFieldCount {
			return int(key[0] - 'a'), true
		}
		return 0, false
	}
	for i, n := range sendFieldNames {
		if n == string(key) {
			return i, true
		}
	}
	return 0, false
}

// isIntSendField reports whether field i is read as an integer.
func isIntSendField(i int) bool {
	switch i {
	case sfDefaultTopicQueueNums, sfQueueID, sfSysFlag, sfBornTimestamp, sfFlag, sfReconsumeTimes, sfMaxReconsumeTimes:
		return true
	}
	return false
}

// decodeSendHeader reads the send header of c: V2's letters unless c is a
// SEND_MESSAGE, whose keys are the long names. Fields are read as
// header's methods read them (a later duplicate wins, null is absent, ""
// gives an integer its default, the same errors). The properties' text is
// appended to props[:0] (kept apart from h, so that a buffer of the
// caller's stays on its stack).
// topics, when not nil, names the known topics: a send to one makes no
// string of its name.
func decodeSendHeader(c *remoting.Command, props []byte, topics *meta.Topics) (h sendRequestHeader, properties []byte, err error) {
	short := c.Code != remoting.SendMessage
	properties = props[:0]
	var num [24]byte
	c.VisitExt(func(f remoting.ExtField) {
		i, ok := sendFieldIndex(f.Key, short)
		if !ok {
			return
		}
		h.set[i], h.blank[i], h.bad[i] = !f.Null, f.Empty(), nil
		if f.Null {
			return
		}
		if isIntSendField(i) {
			if f.Empty() {
				return // "" reads as the default
			}
			n, err := f.Int64() // (no copy of the text)
			h.ints[i] = n
			if err != nil {
				h.bad[i] = f.AppendValue(nil)
			}
			return
		}
		var v []byte
		if i == sfProperties {
			properties = f.AppendValue(properties[:0])
		} else {
			v = f.AppendValue(num[:0])
		}
		switch i {
		case sfTopic:
			if name, ok := topics.Name(v); ok {
				h.topic = name
			} else if h.topic != string(v) {
				h.topic = string(v)
			}
		case sfDefaultTopic:
			h.defaultTopic = internedTopic(v)
		}
	})
	for _, i := range []int{sfProducerGroup, sfTopic, sfQueueID} {
		if !h.set[i] && err == nil {
			err = fmt.Errorf("header field %s is missing", sendFieldNames[i])
		}
	}
	i32 := func(i int, def int32) int32 {
		if !h.set[i] || h.blank[i] {
			return def
		}
		n := h.ints[i]
		switch {
		case err != nil:
		case h.bad[i] != nil:
			err = fmt.Errorf("header field %s=%q is not an integer", sendFieldNames[i], string(h.bad[i]))
		case n < -1<<31 || n > 1<<31-1:
			err = fmt.Errorf("header field %s=%d is out of range", sendFieldNames[i], n)
		}
		return int32(n)
	}
	h.queueID = i32(sfQueueID, 0)
	h.sysFlag = i32(sfSysFlag, 0)
	if h.set[sfBornTimestamp] && !h.blank[sfBornTimestamp] {
		h.bornTimestamp = h.ints[sfBornTimestamp]
		if h.bad[sfBornTimestamp] != nil && err == nil {
			err = fmt.Errorf("header field %s=%q is not an integer", sendFieldNames[sfBornTimestamp], string(h.bad[sfBornTimestamp]))
		}
	}
	h.flag = i32(sfFlag, 0)
	h.reconsumeTimes = i32(sfReconsumeTimes, 0)
	h.maxReconsumeTimes = i32(sfMaxReconsumeTimes, 16)
	h.defaultTopicQueueNums = i32(sfDefaultTopicQueueNums, 4)
	return h, properties, err
}

// internedTopic returns the usual default topic without making a string.
func internedTopic(v []byte) string {
	if string(v) == message.TopicAutoCreate {
		return message.TopicAutoCreate
	}
	return string(v)
}
