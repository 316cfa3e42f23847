// Package e2e runs the official RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2), with stock options, against a
// rocketstore name server and broker on loopback.
package e2e
