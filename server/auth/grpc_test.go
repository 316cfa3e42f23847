package auth

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckV2: a call signed as the RocketMQ 5 clients sign passes; no
// authorization, no date, a wrong secret, a signature of another date, an
// unknown user and a malformed header are refused; a Normal user is
// authorized by its ACL, a Super user skips it.
func TestCheckV2(t *testing.T) {
	a := newTestAuthority(t, Config{AuthenticationEnabled: true, AuthorizationEnabled: true,
		InitUser: &InitUser{Username: "root", Password: "rootpw"}})
	require.NoError(t, a.Store().CreateUser(User{Name: "app", Password: "apppw"}))
	var acl ACL
	acl.Put(Custom, mustEntry(t, "Topic:orders", "Pub", "Allow"))
	require.NoError(t, a.Store().PutACL("app", acl))
	const dt = "20261206T061500Z"
	ip := netip.MustParseAddr("127.0.0.1")
	pub := func(topic string) func() ([]Check, error) {
		return func() ([]Check, error) { return []Check{{Resource: Topic(topic), Actions: Pub}}, nil }
	}
	require.NoError(t, a.CheckV2(SignV2("app", "apppw", dt), dt, ip, pub("orders")))
	require.NoError(t, a.CheckV2(SignV2("root", "rootpw", dt), dt, ip, pub("anything")))
	require.NoError(t, a.CheckV2(SignV2("app", "apppw", dt), dt, ip, func() ([]Check, error) { return nil, nil }))
	for name, c := range map[string]struct{ authz, dt, remark string }{
		"unsigned":       {"", dt, "username cannot be null."},
		"no date":        {SignV2("app", "apppw", dt), "", "datetime is null."},
		"wrong secret":   {SignV2("app", "nope", dt), dt, "check signature failed."},
		"other date":     {SignV2("app", "apppw", dt), "20261206T061501Z", "check signature failed."},
		"unknown user":   {SignV2("bob", "apppw", dt), dt, "User:bob is not found."},
		"no scheme":      {"Credential=app", dt, "authentication header is incorrect."},
		"item no equals": {"MQv2-HMAC-SHA1 Credential=app, Signature", dt, "authentication keyValues length is incorrect, actual length=1."},
		"bad hex":        {"MQv2-HMAC-SHA1 Credential=app, Signature=zz", dt, "create authentication context error."},
		"no credential":  {"MQv2-HMAC-SHA1 Signature=00", dt, "username cannot be null."},
		"not allowed":    {SignV2("app", "apppw", dt), dt, "User:app has no permission to access Topic:payments from 127.0.0.1, no matched policies."},
	} {
		topic := "orders"
		if name == "not allowed" {
			topic = "payments"
		}
		var r *Refusal
		require.ErrorAs(t, a.CheckV2(c.authz, c.dt, ip, pub(topic)), &r, name)
		require.Equal(t, c.remark, r.Remark, name)
	}
}

// FuzzParseV2Authorization: any header parses or is refused, never
// panics; a signature comes back as the base64 of the hex it was given.
func FuzzParseV2Authorization(f *testing.F) {
	f.Add(SignV2("app", "apppw", "20261206T061500Z"))
	f.Add("MQv2-HMAC-SHA1 Credential=a/b/c, SignedHeaders=x-mq-date-time, Signature=0aFF")
	f.Add("x ,,=")
	f.Add(" Credential=")
	f.Fuzz(func(t *testing.T, s string) {
		user, sig, err := ParseV2Authorization(s)
		if err != nil {
			require.Empty(t, user)
			return
		}
		require.NotContains(t, user, "/")
		require.Zero(t, len(sig)%4)
	})
}
