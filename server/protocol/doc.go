// Package protocol holds the RocketMQ remoting types that the broker, the
// name server and the tools share: permissions, data versions, topic
// configs, route data, cluster info and topic lists, with their fastjson
// wire form.
//
// # Route JSON
//
// Bodies are written as fastjson writes them in a Java name server:
// compact, keys sorted, null fields left out. Broker ids, the keys of
// brokerAddrs, are bare numbers ({0:"addr"}) or quoted ({"0":"addr"}), as
// the caller asks; DecodeTopicRouteData and DecodeClusterInfo read both.
package protocol
