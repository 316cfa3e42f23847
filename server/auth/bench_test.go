package auth

import (
	"net/netip"
	"testing"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// BenchmarkGate_SendV2 is the gate's work for one lean-producer send
// (SEND_MESSAGE_V2, raw ext fields, 1 KiB body) by a Normal user whose ACL
// allows the topic: the signature and the policy.
func BenchmarkGate_SendV2(b *testing.B) {
	a := newTestAuthority(b, Config{AuthenticationEnabled: true, AuthorizationEnabled: true})
	if err := a.Store().CreateUser(User{Name: "app", Password: "app-secret"}); err != nil {
		b.Fatal(err)
	}
	var acl ACL
	acl.Put(Custom, mustEntry(b, "Topic:LeanAuth", "Pub", "Allow"))
	acl.Put(Custom, mustEntry(b, "Topic:Other*", "Pub", "Allow"))
	if err := a.Store().PutACL("app", acl); err != nil {
		b.Fatal(err)
	}
	ext := map[string]string{"a": "LEAN_PG", "b": "LeanAuth", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1733450000000",
		"h": "0", "i": "TAGS\x01lean\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false"}
	body := make([]byte, 1024)
	cmd := remoting.NewRequest(remoting.SendMessageV2, ext, body)
	SignCommand(cmd, "app", "app-secret")
	frame, err := cmd.AppendFrame(nil)
	if err != nil {
		b.Fatal(err)
	}
	d, err := remoting.DecodeRawExt(frame)
	if err != nil {
		b.Fatal(err)
	}
	req := &remoting.Request{Command: d}
	mapper := func(_ *remoting.Request, ext Fields) ([]Check, error) {
		return []Check{{Resource: TopicOrGroup(ext.Get("b")), Actions: Pub}}, nil
	}
	gate := a.Gate(mapper)
	_ = netip.Addr{}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if resp := gate(req); resp != nil {
			b.Fatal(resp.Remark)
		}
	}
}
