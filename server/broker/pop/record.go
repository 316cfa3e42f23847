package pop

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errBadRecord means a revive-log record could not be decoded.
var errBadRecord = errors.New("pop: malformed revive record")

// Tags of the revive log's records (Apache: PopAckConstants.CK_TAG, ACK_TAG).
const (
	tagCK  = "ck"
	tagAck = "ack"
)

// ckRecord says that offsets of one queue were delivered at popTime and
// stay invisible until visibleAt; attempts[i] is how many deliveries
// offsets[i] has had, this one included.
type ckRecord struct {
	group, topic string
	queueID      int32
	popTime      int64
	visibleAt    int64
	offsets      []int64
	attempts     []int32
}

// ackRecord says that the delivery of offset made at popTime was acked
// (or ended otherwise: moved to the dead-letter topic, the message gone).
type ackRecord struct {
	group, topic string
	queueID      int32
	popTime      int64
	offset       int64
}

// The bodies are one line of space-separated fields (group and topic names
// hold no spaces): readable with any RocketMQ tool that prints a body.
//
//	ck  <group> <topic> <queueId> <popTime> <visibleAt> <offset>:<attempts> ...
//	ack <group> <topic> <queueId> <popTime> <offset>

func (c *ckRecord) encode() []byte {
	b := make([]byte, 0, 64+len(c.group)+len(c.topic)+16*len(c.offsets))
	b = append(b, tagCK...)
	b = appendHead(b, c.group, c.topic, c.queueID, c.popTime)
	b = append(b, ' ')
	b = strconv.AppendInt(b, c.visibleAt, 10)
	for i, o := range c.offsets {
		b = append(b, ' ')
		b = strconv.AppendInt(b, o, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(c.attempts[i]), 10)
	}
	return b
}

func (a *ackRecord) encode() []byte {
	b := make([]byte, 0, 48+len(a.group)+len(a.topic))
	b = append(b, tagAck...)
	b = appendHead(b, a.group, a.topic, a.queueID, a.popTime)
	b = append(b, ' ')
	return strconv.AppendInt(b, a.offset, 10)
}

func appendHead(b []byte, group, topic string, queueID int32, popTime int64) []byte {
	b = append(b, ' ')
	b = append(b, group...)
	b = append(b, ' ')
	b = append(b, topic...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(queueID), 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, popTime, 10)
}

// parseRecord decodes a body into a *ckRecord or an *ackRecord.
func parseRecord(body []byte) (any, error) {
	f := strings.Fields(string(body))
	if len(f) < 6 {
		return nil, fmt.Errorf("%w: %d fields", errBadRecord, len(f))
	}
	qid, err1 := strconv.ParseInt(f[3], 10, 32)
	popTime, err2 := strconv.ParseInt(f[4], 10, 64)
	if err := errors.Join(err1, err2); err != nil || qid < 0 {
		return nil, fmt.Errorf("%w: %q", errBadRecord, body)
	}
	switch f[0] {
	case tagAck:
		if len(f) != 6 {
			return nil, fmt.Errorf("%w: ack with %d fields", errBadRecord, len(f))
		}
		off, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Errorf("%w: ack offset %q", errBadRecord, f[5])
		}
		return &ackRecord{group: f[1], topic: f[2], queueID: int32(qid), popTime: popTime, offset: off}, nil
	case tagCK:
		c := &ckRecord{group: f[1], topic: f[2], queueID: int32(qid), popTime: popTime}
		var err error
		if c.visibleAt, err = strconv.ParseInt(f[5], 10, 64); err != nil {
			return nil, fmt.Errorf("%w: ck visibleAt %q", errBadRecord, f[5])
		}
		for _, p := range f[6:] {
			o, a, ok := strings.Cut(p, ":")
			off, err1 := strconv.ParseInt(o, 10, 64)
			att, err2 := strconv.ParseInt(a, 10, 32)
			if !ok || err1 != nil || err2 != nil || off < 0 || att < 1 {
				return nil, fmt.Errorf("%w: ck entry %q", errBadRecord, p)
			}
			c.offsets = append(c.offsets, off)
			c.attempts = append(c.attempts, int32(att))
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: tag %q", errBadRecord, f[0])
}
