// Package namesrv is a RocketMQ name server: brokers register their
// topics with it (REGISTER_BROKER, every 30 s) and clients ask it where a
// topic's queues are (GET_ROUTEINFO_BY_TOPIC). It is a library: New builds
// a Server on a remoting.Server, and cmd/namesrv or cmd/broker serve it.
//
// The state is RocketMQ's RouteInfoManager, here RouteTable:
//
//	topic       -> broker name -> QueueData {perm, read/write queue nums}
//	broker name -> BrokerData {cluster, broker id -> address}
//	cluster     -> broker names
//	(cluster, broker address) -> liveness: last registration, timeout,
//	                             data version, connection, HA address
//
// A broker is dropped, with its queues, when it unregisters, when the
// connection it registered on closes (onChannelDestroy), or when it has
// not registered for its heartbeat timeout (120 s by default), which a
// scan every 5 s checks. A topic without queues has no route: clients get
// TOPIC_NOT_EXIST (17), and the Go client then falls back to TBW102.
//
// # Route JSON
//
// Bodies are written as fastjson writes them in a Java name server:
// compact, keys sorted, null fields left out. Broker ids, the keys of
// brokerAddrs, are bare numbers for clients older than 4.9.4 (the Go
// client says it is 4.5.2) and quoted for the rest or when the request
// asks acceptStandardJsonOnly:
//
//	{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"b",
//	  "cluster":"C","enableActingMaster":false}],"filterServerTable":{},
//	 "queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,
//	  "topicSysFlag":0,"writeQueueNums":4}]}
//
// The Go client splits brokerAddrs by hand on ',' and ':' and strips
// quotes, so any white space would break it; both key forms work.
// protocol.DecodeTopicRouteData and protocol.DecodeClusterInfo read both
// forms.
//
// # REGISTER_BROKER body
//
// Plain JSON (RegisterBrokerBody), or, with ext compressed=true, a zlib
// stream of int32-length-prefixed parts: DataVersion JSON; topic count and
// each TopicConfig in its space-separated string form ("name read write
// perm filterType attributesJSON"); the filter server list JSON; from
// broker version 5.0.0 the static-topic mappings (ignored here).
package namesrv
