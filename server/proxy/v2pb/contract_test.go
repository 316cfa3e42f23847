package v2pb

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestContract_MethodsAndFieldNumbers pins the parts of the contract a
// client's bytes depend on: the service's full method names and the field
// numbers of the messages every RPC carries. A regeneration from edited
// .proto files that moves any of them fails here.
func TestContract_MethodsAndFieldNumbers(t *testing.T) {
	sd := File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService")
	if sd == nil {
		t.Fatal("no MessagingService")
	}
	want := []string{"QueryRoute", "Heartbeat", "SendMessage", "QueryAssignment", "ReceiveMessage",
		"AckMessage", "ForwardMessageToDeadLetterQueue", "PullMessage", "UpdateOffset", "GetOffset",
		"QueryOffset", "EndTransaction", "Telemetry", "NotifyClientTermination", "ChangeInvisibleDuration",
		"RecallMessage", "SyncLiteSubscription"}
	for _, m := range want {
		if sd.Methods().ByName(protoreflect.Name(m)) == nil {
			t.Errorf("method %s missing", m)
		}
	}
	if got := MessagingService_ReceiveMessage_FullMethodName; got != "/apache.rocketmq.v2.MessagingService/ReceiveMessage" {
		t.Errorf("full method name %q", got)
	}
	fields := []struct {
		msg   proto.Message
		field string
		num   protoreflect.FieldNumber
	}{
		{&Message{}, "topic", 1}, {&Message{}, "user_properties", 2}, {&Message{}, "system_properties", 3}, {&Message{}, "body", 4},
		{&SystemProperties{}, "tag", 1}, {&SystemProperties{}, "keys", 2}, {&SystemProperties{}, "message_id", 3},
		{&SystemProperties{}, "body_digest", 4}, {&SystemProperties{}, "receipt_handle", 12}, {&SystemProperties{}, "delivery_attempt", 16},
		{&SystemProperties{}, "message_group", 17},
		{&ReceiveMessageRequest{}, "group", 1}, {&ReceiveMessageRequest{}, "message_queue", 2}, {&ReceiveMessageRequest{}, "invisible_duration", 5},
		{&ReceiveMessageRequest{}, "auto_renew", 6}, {&ReceiveMessageRequest{}, "long_polling_timeout", 7},
		{&AckMessageEntry{}, "message_id", 1}, {&AckMessageEntry{}, "receipt_handle", 2},
		{&Status{}, "code", 1}, {&Status{}, "message", 2},
		{&TelemetryCommand{}, "settings", 2}, {&TelemetryCommand{}, "recover_orphaned_transaction_command", 5},
	}
	for _, f := range fields {
		fd := f.msg.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(f.field))
		if fd == nil || fd.Number() != f.num {
			t.Errorf("%s.%s: want field %d, got %v", f.msg.ProtoReflect().Descriptor().FullName(), f.field, f.num, fd)
		}
	}
	codes := map[Code]int32{Code_OK: 20000, Code_BAD_REQUEST: 40000, Code_INVALID_RECEIPT_HANDLE: 40013,
		Code_ILLEGAL_INVISIBLE_TIME: 40011, Code_TOPIC_NOT_FOUND: 40402, Code_CONSUMER_GROUP_NOT_FOUND: 40403,
		Code_MESSAGE_NOT_FOUND: 40401, Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE: 40014, Code_ILLEGAL_POLLING_TIME: 40018}
	for c, n := range codes {
		if int32(c) != n {
			t.Errorf("code %s = %d, want %d", c, int32(c), n)
		}
	}
}
