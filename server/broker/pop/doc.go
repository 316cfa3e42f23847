// Package pop is POP consumption (RocketMQ 5): a consumer group receives
// messages from all queues of a topic, each with an invisible time and a
// receipt handle; it acks them, or changes their invisible time, and what
// is not acked in time is delivered again, up to the group's maximum
// delivery attempts, then moved to the group's dead-letter topic. FIFO
// groups get a queue's next messages only when the previous were acked.
// The remoting processors (POP_MESSAGE, ACK_MESSAGE, ...) and the gRPC
// endpoint share one Service.
//
// # Durable state
//
// Like Apache RocketMQ, the state is a log of check-point ("ck") and ack
// records put to the revive topic rmq_sys_REVIVE_LOG_<cluster> through the
// store's public API, so it is as durable as the messages themselves and
// needs no file of its own. Unlike Apache, a message that comes back after
// its invisible time is read again from its own queue offset instead of
// being copied to a %RETRY% topic by a revive scan: one record per pop and
// per ack, no copy of the message, and the delivery attempt counted in the
// state. On Open the log is replayed: every offset popped and not acked is
// in flight again with the invisible time it had, every acked one stays
// acked. Each group's consumer offset (meta's consumerOffset.json) is kept
// at the first offset not yet acked, so a revive log that expired with its
// CommitLog files still leaves no acked message to deliver again.
package pop
