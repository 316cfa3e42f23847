// Package v2pb holds the Go code generated from apache.rocketmq.v2, the gRPC
// contract of RocketMQ 5's clients (apache/rocketmq-apis v2.1.2; the .proto
// files are in ../proto). The code is committed, so building needs no protoc;
// regenerating needs protoc (apt-get install protobuf-compiler),
// protoc-gen-go v1.36.12 and protoc-gen-go-grpc v1.6.0 on PATH.
package v2pb

//go:generate protoc -I ../proto --go_out=../../.. --go_opt=module=github.com/rocketstore/rocketstore --go-grpc_out=../../.. --go-grpc_opt=module=github.com/rocketstore/rocketstore apache/rocketmq/v2/definition.proto apache/rocketmq/v2/service.proto apache/rocketmq/v2/admin.proto
