package store

// GetStatus is the outcome of GetMessage (RocketMQ's GetMessageStatus).
type GetStatus int

// The statuses of GetMessage, with RocketMQ's names.
const (
	// Found: at least one message matched (FOUND).
	Found GetStatus = iota
	// NoMatchedMessage: messages were there but none passed the filter (NO_MATCHED_MESSAGE).
	NoMatchedMessage
	// MessageWasRemoving: the queue points into CommitLog files already deleted (MESSAGE_WAS_REMOVING).
	MessageWasRemoving
	// OffsetFoundNull: the queue has no unit readable at the offset (OFFSET_FOUND_NULL).
	OffsetFoundNull
	// OffsetOverflowBadly: the offset is beyond the queue's max offset (OFFSET_OVERFLOW_BADLY).
	OffsetOverflowBadly
	// OffsetOverflowOne: the offset equals the max offset: nothing new yet (OFFSET_OVERFLOW_ONE).
	OffsetOverflowOne
	// OffsetTooSmall: the offset is below the queue's min offset (OFFSET_TOO_SMALL).
	OffsetTooSmall
	// NoMatchedLogicQueue: the topic/queue does not exist (NO_MATCHED_LOGIC_QUEUE).
	NoMatchedLogicQueue
	// NoMessageInQueue: the queue exists but is empty (NO_MESSAGE_IN_QUEUE).
	NoMessageInQueue
)

var getStatusNames = [...]string{
	Found:               "FOUND",
	NoMatchedMessage:    "NO_MATCHED_MESSAGE",
	MessageWasRemoving:  "MESSAGE_WAS_REMOVING",
	OffsetFoundNull:     "OFFSET_FOUND_NULL",
	OffsetOverflowBadly: "OFFSET_OVERFLOW_BADLY",
	OffsetOverflowOne:   "OFFSET_OVERFLOW_ONE",
	OffsetTooSmall:      "OFFSET_TOO_SMALL",
	NoMatchedLogicQueue: "NO_MATCHED_LOGIC_QUEUE",
	NoMessageInQueue:    "NO_MESSAGE_IN_QUEUE",
}

// String is RocketMQ's name of the status.
func (s GetStatus) String() string {
	if s >= 0 && int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return "UNKNOWN"
}

// PutStatus is the outcome of a put that was written (RocketMQ's
// PutMessageStatus); refusals are errors.
type PutStatus int

// The statuses of a written put.
const (
	// PutOK: written and, as the flush mode asks, durable (PUT_OK).
	PutOK PutStatus = iota
	// FlushDiskTimeout: written, but the sync flush did not finish in time (FLUSH_DISK_TIMEOUT).
	FlushDiskTimeout
	// FlushSlaveTimeout: written, but the slave did not confirm in time (FLUSH_SLAVE_TIMEOUT).
	FlushSlaveTimeout
	// SlaveNotAvailable: written, but no slave is in sync (SLAVE_NOT_AVAILABLE).
	SlaveNotAvailable
)

var putStatusNames = [...]string{
	PutOK:             "PUT_OK",
	FlushDiskTimeout:  "FLUSH_DISK_TIMEOUT",
	FlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	SlaveNotAvailable: "SLAVE_NOT_AVAILABLE",
}

// String is RocketMQ's name of the status.
func (s PutStatus) String() string {
	if s >= 0 && int(s) < len(putStatusNames) {
		return putStatusNames[s]
	}
	return "UNKNOWN"
}
