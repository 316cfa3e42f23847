// Package proxy serves RocketMQ 5's gRPC MessagingService
// (apache.rocketmq.v2, generated in v2pb) inside the broker process, as
// Apache's proxy does in "local" mode: every call goes straight to the
// broker's tables, its store and its POP service, with no loopback hop.
//
// Errors are answered as Apache's proxy answers them: the RPC succeeds and
// the response's Status carries RocketMQ's Code (status.go maps every error
// in one place); only transport problems are gRPC errors.
package proxy
