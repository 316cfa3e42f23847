// Package clients is the broker's bookkeeping of its clients: RocketMQ's
// ConsumerManager, ProducerManager, ClientHousekeepingService,
// DefaultConsumerIdsChangeListener and ClientManageProcessor. A Manager
// learns who is in which group from heartbeats, answers the consumer list
// clients rebalance by, gives the pull processor the subscriptions it
// filters with, and tells a consumer group's members when the group
// changes.
//
// # State
//
//	consumer group -> connection -> member {clientID, language, version, last heartbeat}
//	               -> topic -> Subscription (the newest subVersion wins)
//	               -> consume type, message model, consume-from-where, notify flag
//	producer group -> connection -> member
//	connection     -> its groups (so a closed connection leaves all at once)
//	topic          -> consumer groups subscribed
//
// A member is keyed by connection, not client id: one client on two
// connections is two members (listed once by ConsumerIDs). A group exists
// while it has members.
//
// # Requests
//
//	HEART_BEAT (34)                  body HeartbeatData JSON -> SUCCESS, no body
//	UNREGISTER_CLIENT (35)           ext clientID, producerGroup, consumerGroup -> SUCCESS
//	GET_CONSUMER_LIST_BY_GROUP (38)  ext consumerGroup -> {"consumerIdList":["id1","id2"]},
//	                                 or SYSTEM_ERROR "no consumer for this group, <group>"
//
// and, from the broker to a client, oneway:
//
//	NOTIFY_CONSUMER_IDS_CHANGED (40) ext consumerGroup
//
// # Leaving a group
//
// A client leaves a group when it unregisters (Java clients do at
// shutdown), when its connection closes (the Go client never unregisters,
// it just closes), or when it has sent no heartbeat naming the group for
// ChannelExpiredTimeout (120 s; clients send one every 30 s). A scan every
// ScanInterval (10 s) finds the silent; a connection left in no group by
// the scan is closed, as RocketMQ closes expired channels.
//
// # Notifications
//
// When a clustering consumer group gains or loses a member, or a topic is
// added to or dropped from its subscriptions, every remaining member gets
// NOTIFY_CONSUMER_IDS_CHANGED and rebalances at once instead of within 20 s.
// Notices are written off the request goroutine, one sender per
// connection, each write bounded by NotifyTimeout; a burst of changes
// collapses into one notice per group and connection.
//
// # Differences from RocketMQ
//
//   - An expired client is notified about too (RocketMQ only notifies on
//     joins, unregisters and closes), and only a connection left in no
//     group is closed (RocketMQ closes it when any of its groups expires,
//     which disconnects clients that merely shut down one consumer).
//   - A replaced subscription that filters differently counts as a change
//     and is notified; RocketMQ counts only added and dropped topics.
//   - ConsumerIDs is sorted and without duplicates, and leaves out closed
//     connections; RocketMQ lists every member in hash order.
//   - Unregister notifies only when a member was removed.
//   - Heartbeat V2 (Java 5.x) is not offered: replies carry no
//     IS_SUPPORT_HEART_BEAT_V2, so clients send full heartbeats.
//   - Tags codes are computed from the tags (Java's String.hashCode); the
//     codeSet the client sends is ignored, since the Go client's differs
//     for non-ASCII tags.
//   - A heartbeat without clientID is refused with SYSTEM_ERROR.
package clients
