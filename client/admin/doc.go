// Package admin is an operator's client of RocketMQ name servers and
// brokers (RocketMQ's MQAdminExt and the MQClientAPIImpl calls under it),
// over the remoting protocol only: the request codes, headers and bodies
// Apache RocketMQ's admin tools send, so it works against rocketstore and
// Apache RocketMQ alike. cmd/mqadmin is built on it.
//
// Calls take a context; each also stops after Options.Timeout. A name
// server or broker that cannot be reached gives an *UnreachableError; an
// answer other than SUCCESS gives a *ResponseError with RocketMQ's code
// and remark.
package admin
