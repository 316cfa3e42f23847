// Package console is rocketstore's web console: the pages of RocketMQ's
// dashboard (apache/rocketmq-dashboard), server-rendered from Go
// templates over client/admin, the same client mqadmin uses. It never
// touches a store or a broker's insides, so it serves a rocketstore
// broker's HTTP port and, through cmd/dashboard, any RocketMQ cluster,
// Apache's included.
//
// Pages (under Options.BasePath):
//
//	/            cluster overview: brokers by group and role, versions, put/get
//	             TPS, disk use, CommitLog offsets, replication lag, TPS charts
//	/broker      one broker's runtime figures and config (secrets masked)
//	/topics      topics, filtered and paginated; create
//	/topic       a topic's route, queues, consumer groups, TPS; update, delete,
//	             send a test message
//	/groups      consumer groups, filtered and paginated, with lag; create
//	/group       a group's lag per queue, clients, subscriptions, lag chart;
//	             reset offsets by time, delete
//	/producers   a producer group's connections
//	/messages    search by topic and time range, by key, by message id
//	/message     one message: properties, body as text or hex, which groups
//	             consumed it; resend it to a group
//	/dlq         a group's dead-letter messages: resend, export
//
// Everything is in the binary (templates, CSS and a little script of
// ours, with embed); charts are SVG drawn on the server from samples kept
// in memory for an hour. Writes need a CSRF token and a WritePolicy that
// allows the request: by default only requests from the loopback
// interface may change anything.
package console
