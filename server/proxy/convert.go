package proxy

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/pop"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// systemProperties are the property names RocketMQ keeps for itself
// (MessageConst.STRING_HASH_SET): never user properties, and refused as
// the key of one.
var systemProperties = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`KEYS TAGS WAIT DELAY RETRY_TOPIC REAL_TOPIC REAL_QID TRAN_MSG PGROUP
		MIN_OFFSET MAX_OFFSET BUYER_ID ORIGIN_MESSAGE_ID TRANSFER_FLAG CORRECTION_FLAG RECONSUME_TIME
		MSG_REGION TRACE_ON UNIQ_KEY EXTEND_UNIQ_INFO MAX_RECONSUME_TIMES CONSUME_START_TIME INNER_NUM
		INNER_BASE CHECK_IMMUNITY_TIME_IN_SECONDS TRAN_PREPARED_QUEUE_OFFSET __transactionId__
		TRANSACTION_CHECK_TIMES INSTANCE_ID CORRELATION_ID REPLY_TO_CLIENT TTL ARRIVE_TIME PUSH_REPLY_TIME
		CLUSTER MSG_TYPE POP_CK POP_CK_OFFSET 1ST_POP_TIME __SHARDINGKEY PROPERTY_FORWARD_QUEUE_ID REDIRECT
		INNER_MULTI_DISPATCH INNER_MULTI_QUEUE_OFFSET TRACE_CONTEXT TIMER_DELAY_SEC TIMER_DELIVER_MS
		__BORNHOST BORN_TIMESTAMP TIMER_ENQUEUE_MS TIMER_DEQUEUE_MS TIMER_ROLL_TIMES TIMER_OUT_MS
		TIMER_DEL_UNIQKEY TIMER_DELAY_LEVEL TIMER_DELAY_MS DLQ_ORIGIN_TOPIC DLQ_ORIGIN_MESSAGE_ID`) {
		systemProperties[k] = true
	}
}

// bodyDigest is MD5 in upper-case hex, as Apache's BinaryUtil.generateMd5
// (clients compare it case-sensitively).
func bodyDigest(body []byte) string {
	sum := md5.Sum(body)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// messageType tells a stored message's type from its properties
// (TopicMessageType.parseFromMessageProperty).
func messageType(props map[string]string) v2.MessageType {
	switch {
	case props[message.PropertyTransactionPrepared] == "true":
		return v2.MessageType_TRANSACTION
	case props[message.PropertyDelayTimeLevel] != "" || props[message.PropertyTimerDeliverMS] != "" ||
		props[message.PropertyTimerDelaySec] != "" || props[message.PropertyTimerDelayMS] != "":
		return v2.MessageType_DELAY
	case props[message.PropertyShardingKey] != "":
		return v2.MessageType_FIFO
	}
	return v2.MessageType_NORMAL
}

// toProto converts a delivered message as GrpcConverter.buildMessage does.
func toProto(m *message.Message, h *pop.Handle, attempt int32, invisible time.Duration) *v2.Message {
	props := message.ParseProperties(m.Properties)
	user := map[string]string{}
	for k, v := range props {
		if !systemProperties[k] && !strings.HasPrefix(k, "__RMQ.TRANSIENT.") {
			user[k] = v
		}
	}
	sp := &v2.SystemProperties{
		MessageId:      props[message.PropertyUniqClientMessageIDKeyIndex],
		BodyDigest:     &v2.Digest{Type: v2.DigestType_MD5, Checksum: bodyDigest(m.Body)},
		BodyEncoding:   v2.Encoding_IDENTITY,
		MessageType:    messageType(props),
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		BornHost:       props[message.PropertyBornHost],
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:      m.StoreHost.String(),
		QueueId:        m.QueueID,
		QueueOffset:    &m.QueueOffset,
	}
	if sp.MessageId == "" {
		sp.MessageId = message.OffsetMsgID(m.StoreHost, m.PhysicalOffset)
	}
	if sp.BornHost == "" {
		sp.BornHost = m.BornHost.Addr().String()
	}
	if m.SysFlag&message.FlagCompressed != 0 {
		sp.BodyEncoding = v2.Encoding_GZIP
	}
	if t, ok := props[message.PropertyTags]; ok {
		sp.Tag = &t
	}
	if k := props[message.PropertyKeys]; k != "" {
		sp.Keys = strings.Fields(k)
	}
	if d, err := strconv.ParseInt(props[message.PropertyTimerDeliverMS], 10, 64); err == nil {
		sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(d))
	}
	if g := props[message.PropertyShardingKey]; g != "" {
		sp.MessageGroup = &g
	}
	if tc := props[message.PropertyTraceContext]; tc != "" {
		sp.TraceContext = &tc
	}
	if ot, oid := props[message.PropertyDLQOriginTopic], props[message.PropertyDLQOriginMessageID]; ot != "" && oid != "" {
		sp.DeadLetterQueue = &v2.DeadLetterQueue{Topic: ot, MessageId: oid}
	}
	if h != nil {
		rh := h.String()
		sp.ReceiptHandle = &rh
		sp.DeliveryAttempt = &attempt
		sp.InvisibleDuration = durationpb.New(invisible)
	} else {
		a := m.ReconsumeTimes + 1
		sp.DeliveryAttempt = &a
	}
	return &v2.Message{Topic: &v2.Resource{Name: m.Topic}, UserProperties: user, SystemProperties: sp, Body: m.Body}
}
