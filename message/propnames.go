package message

// Property names, as in RocketMQ's MessageConst (the Java constant is named
// after each). All are literal strings stored in the PROPERTIES field.
const (
	// PropertyKeys (PROPERTY_KEYS): space-separated keys, indexed in the
	// IndexFile; iterate them with Keys.
	PropertyKeys = "KEYS"
	// PropertyTags (PROPERTY_TAGS): the tag; TagsCode gives its ConsumeQueue
	// tags code.
	PropertyTags = "TAGS"
	// PropertyWaitStoreMsgOK (PROPERTY_WAIT_STORE_MSG_OK): "false" means the
	// producer does not wait for flush/replication; absent means true.
	PropertyWaitStoreMsgOK = "WAIT"
	// PropertyDelayTimeLevel (PROPERTY_DELAY_TIME_LEVEL): delay level 1..18.
	PropertyDelayTimeLevel = "DELAY"
	// PropertyRetryTopic (PROPERTY_RETRY_TOPIC): original topic of a retry.
	PropertyRetryTopic = "RETRY_TOPIC"
	// PropertyRealTopic (PROPERTY_REAL_TOPIC): original topic of a delayed,
	// timer or transaction half message.
	PropertyRealTopic = "REAL_TOPIC"
	// PropertyRealQueueID (PROPERTY_REAL_QUEUE_ID): original queue id.
	PropertyRealQueueID = "REAL_QID"
	// PropertyTransactionPrepared (PROPERTY_TRANSACTION_PREPARED): "true"
	// on a transaction half message.
	PropertyTransactionPrepared = "TRAN_MSG"
	// PropertyProducerGroup (PROPERTY_PRODUCER_GROUP).
	PropertyProducerGroup = "PGROUP"
	// PropertyMinOffset (PROPERTY_MIN_OFFSET): queue min offset, set on pull.
	PropertyMinOffset = "MIN_OFFSET"
	// PropertyMaxOffset (PROPERTY_MAX_OFFSET): queue max offset, set on pull.
	PropertyMaxOffset = "MAX_OFFSET"
	// PropertyBuyerID (PROPERTY_BUYER_ID).
	PropertyBuyerID = "BUYER_ID"
	// PropertyOriginMessageID (PROPERTY_ORIGIN_MESSAGE_ID): msgId of the
	// message a retry was made from.
	PropertyOriginMessageID = "ORIGIN_MESSAGE_ID"
	// PropertyTransferFlag (PROPERTY_TRANSFER_FLAG).
	PropertyTransferFlag = "TRANSFER_FLAG"
	// PropertyCorrectionFlag (PROPERTY_CORRECTION_FLAG).
	PropertyCorrectionFlag = "CORRECTION_FLAG"
	// PropertyMQ2Flag (PROPERTY_MQ2_FLAG).
	PropertyMQ2Flag = "MQ2_FLAG"
	// PropertyReconsumeTime (PROPERTY_RECONSUME_TIME).
	PropertyReconsumeTime = "RECONSUME_TIME"
	// PropertyMsgRegion (PROPERTY_MSG_REGION).
	PropertyMsgRegion = "MSG_REGION"
	// PropertyTraceSwitch (PROPERTY_TRACE_SWITCH).
	PropertyTraceSwitch = "TRACE_ON"
	// PropertyUniqClientMessageIDKeyIndex (PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX):
	// the client message id (see UniqIDGenerator), indexed in the IndexFile.
	PropertyUniqClientMessageIDKeyIndex = "UNIQ_KEY"
	// PropertyExtendUniqInfo (PROPERTY_EXTEND_UNIQ_INFO).
	PropertyExtendUniqInfo = "EXTEND_UNIQ_INFO"
	// PropertyMaxReconsumeTimes (PROPERTY_MAX_RECONSUME_TIMES).
	PropertyMaxReconsumeTimes = "MAX_RECONSUME_TIMES"
	// PropertyConsumeStartTimestamp (PROPERTY_CONSUME_START_TIMESTAMP).
	PropertyConsumeStartTimestamp = "CONSUME_START_TIME"
	// PropertyInnerNum (PROPERTY_INNER_NUM): 5.x batch ConsumeQueue count.
	PropertyInnerNum = "INNER_NUM"
	// PropertyInnerBase (PROPERTY_INNER_BASE): 5.x batch ConsumeQueue base.
	PropertyInnerBase = "INNER_BASE"
	// PropertyDupInfo (DUP_INFO).
	PropertyDupInfo = "DUP_INFO"
	// PropertyCheckImmunityTimeInSeconds (PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS).
	PropertyCheckImmunityTimeInSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	// PropertyTransactionPreparedQueueOffset (PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET).
	PropertyTransactionPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	// PropertyTransactionID (PROPERTY_TRANSACTION_ID).
	PropertyTransactionID = "__transactionId__"
	// PropertyTransactionCheckTimes (PROPERTY_TRANSACTION_CHECK_TIMES).
	PropertyTransactionCheckTimes = "TRANSACTION_CHECK_TIMES"
	// PropertyInstanceID (PROPERTY_INSTANCE_ID).
	PropertyInstanceID = "INSTANCE_ID"
	// PropertyCorrelationID (PROPERTY_CORRELATION_ID).
	PropertyCorrelationID = "CORRELATION_ID"
	// PropertyMessageReplyToClient (PROPERTY_MESSAGE_REPLY_TO_CLIENT).
	PropertyMessageReplyToClient = "REPLY_TO_CLIENT"
	// PropertyMessageTTL (PROPERTY_MESSAGE_TTL).
	PropertyMessageTTL = "TTL"
	// PropertyReplyMessageArriveTime (PROPERTY_REPLY_MESSAGE_ARRIVE_TIME).
	PropertyReplyMessageArriveTime = "ARRIVE_TIME"
	// PropertyPushReplyTime (PROPERTY_PUSH_REPLY_TIME).
	PropertyPushReplyTime = "PUSH_REPLY_TIME"
	// PropertyCluster (PROPERTY_CLUSTER): cluster name, added by the broker.
	PropertyCluster = "CLUSTER"
	// PropertyMessageType (PROPERTY_MESSAGE_TYPE).
	PropertyMessageType = "MSG_TYPE"
	// PropertyPopCK (PROPERTY_POP_CK).
	PropertyPopCK = "POP_CK"
	// PropertyPopCKOffset (PROPERTY_POP_CK_OFFSET).
	PropertyPopCKOffset = "POP_CK_OFFSET"
	// PropertyFirstPopTime (PROPERTY_FIRST_POP_TIME).
	PropertyFirstPopTime = "1ST_POP_TIME"
	// PropertyShardingKey (PROPERTY_SHARDING_KEY).
	PropertyShardingKey = "__SHARDINGKEY"
	// PropertyForwardQueueID (PROPERTY_FORWARD_QUEUE_ID).
	PropertyForwardQueueID = "PROPERTY_FORWARD_QUEUE_ID"
	// PropertyRedirect (PROPERTY_REDIRECT).
	PropertyRedirect = "REDIRECT"
	// PropertyInnerMultiDispatch (PROPERTY_INNER_MULTI_DISPATCH): LMQ queues.
	PropertyInnerMultiDispatch = "INNER_MULTI_DISPATCH"
	// PropertyInnerMultiQueueOffset (PROPERTY_INNER_MULTI_QUEUE_OFFSET):
	// LMQ queue offsets.
	PropertyInnerMultiQueueOffset = "INNER_MULTI_QUEUE_OFFSET"
	// PropertyTraceContext (PROPERTY_TRACE_CONTEXT).
	PropertyTraceContext = "TRACE_CONTEXT"
	// PropertyBornHost (PROPERTY_BORN_HOST).
	PropertyBornHost = "__BORNHOST"
	// PropertyBornTimestamp (PROPERTY_BORN_TIMESTAMP).
	PropertyBornTimestamp = "BORN_TIMESTAMP"
	// PropertyTransientPrefix (PROPERTY_TRANSIENT_PREFIX): properties whose
	// name starts with it are never stored on the broker's disk.
	PropertyTransientPrefix = "__RMQ.TRANSIENT."
	// PropertyTransientTopicConfig (PROPERTY_TRANSIENT_TOPIC_CONFIG).
	PropertyTransientTopicConfig = PropertyTransientPrefix + "TOPIC_SYS_FLAG"
	// PropertyTransientGroupConfig (PROPERTY_TRANSIENT_GROUP_CONFIG).
	PropertyTransientGroupConfig = PropertyTransientPrefix + "GROUP_SYS_FLAG"
	// PropertyKeySeparator (KEY_SEPARATOR) separates the keys in PropertyKeys.
	PropertyKeySeparator = " "

	// PropertyTimerDeliverMS (PROPERTY_TIMER_DELIVER_MS): absolute delivery
	// time in ms (5.x timer).
	PropertyTimerDeliverMS = "TIMER_DELIVER_MS"
	// PropertyTimerDelaySec (PROPERTY_TIMER_DELAY_SEC): relative delay in s.
	PropertyTimerDelaySec = "TIMER_DELAY_SEC"
	// PropertyTimerDelayMS (PROPERTY_TIMER_DELAY_MS): relative delay in ms.
	PropertyTimerDelayMS = "TIMER_DELAY_MS"
	// PropertyTimerOutMS (PROPERTY_TIMER_OUT_MS): rounded delivery time.
	PropertyTimerOutMS = "TIMER_OUT_MS"
	// PropertyTimerEnqueueMS (PROPERTY_TIMER_ENQUEUE_MS).
	PropertyTimerEnqueueMS = "TIMER_ENQUEUE_MS"
	// PropertyTimerDequeueMS (PROPERTY_TIMER_DEQUEUE_MS).
	PropertyTimerDequeueMS = "TIMER_DEQUEUE_MS"
	// PropertyTimerRollTimes (PROPERTY_TIMER_ROLL_TIMES).
	PropertyTimerRollTimes = "TIMER_ROLL_TIMES"
	// PropertyTimerDelUniqKey (PROPERTY_TIMER_DEL_UNIQKEY).
	PropertyTimerDelUniqKey = "TIMER_DEL_UNIQKEY"
	// PropertyTimerDelMS (PROPERTY_TIMER_DEL_MS).
	PropertyTimerDelMS = "TIMER_DEL_MS"
	// PropertyTimerDelayLevel (PROPERTY_TIMER_DELAY_LEVEL).
	PropertyTimerDelayLevel = "TIMER_DELAY_LEVEL"
	// PropertyCRC32 (PROPERTY_CRC32): optional 5.x record CRC property, written
	// last as "__CRC32#"·0x01·10 digits·0x02.
	PropertyCRC32 = "__CRC32#"
	// PropertyDLQOriginTopic (PROPERTY_DLQ_ORIGIN_TOPIC).
	PropertyDLQOriginTopic = "DLQ_ORIGIN_TOPIC"
	// PropertyDLQOriginMessageID (PROPERTY_DLQ_ORIGIN_MESSAGE_ID).
	PropertyDLQOriginMessageID = "DLQ_ORIGIN_MESSAGE_ID"
)
