package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"hash"
	"sort"
	"testing"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/stretchr/testify/require"
)

// goClientSign is the Go client's ACLInterceptor (rocketmq-client-go/v2
// internal/remote/interceptor.go), restated: AccessKey is added, the values
// of every ext field are concatenated in key order, then the body;
// HMAC-SHA1 with the secret, standard base64. (The package is internal to
// the client's module and cannot be imported; the e2e tests run the real
// one.)
func goClientSign(ext map[string]string, body []byte, ak, sk string) {
	m := map[string]string{"AccessKey": ak}
	order := []string{"AccessKey"}
	for k, v := range ext {
		m[k] = v
		order = append(order, k)
	}
	sort.Strings(order)
	content := ""
	for _, k := range order {
		content += m[k]
	}
	mac := hmac.New(sha1.New, []byte(sk))
	mac.Write([]byte(content))
	mac.Write(body)
	ext["Signature"] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	ext["AccessKey"] = ak
}

// frames encodes cmd in both header forms and decodes each with and
// without raw ext fields: what the broker's processors receive.
func frames(t testing.TB, cmd *remoting.Command) []*remoting.Command {
	t.Helper()
	var out []*remoting.Command
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		c := cmd.Clone()
		c.SerializeType = st
		b, err := c.AppendFrame(nil)
		require.NoError(t, err)
		for _, raw := range []bool{false, true} {
			var d *remoting.Command
			if raw {
				d, err = remoting.DecodeRawExt(b)
			} else {
				d, err = remoting.Decode(b)
			}
			require.NoError(t, err)
			out = append(out, d)
		}
	}
	return out
}

func newTestAuthority(t testing.TB, cfg Config) *Authority {
	t.Helper()
	a, err := Open(t.TempDir()+"/config/auth.json", cfg, nil)
	require.NoError(t, err)
	return a
}

func authenticate(a *Authority, cmd *remoting.Command) error {
	f := signedPool.Get().(*signedFields)
	defer signedPool.Put(f)
	f.collect(cmd)
	if !f.hasAK {
		return refuse("username cannot be null.")
	}
	return a.Authenticate(string(f.user), f.sig, func(h hash.Hash) { f.writeContent(h, cmd.Body) })
}

// TestAuthenticate_GoClientSignature: a request signed as the Go client
// signs passes, in every header form the broker reads; a wrong secret, an
// unknown user, a changed body, a changed or added header field fail.
func TestAuthenticate_GoClientSignature(t *testing.T) {
	a := newTestAuthority(t, Config{InitUser: &InitUser{Username: "alice", Password: "s3cret"}})
	signed := func(sk string) *remoting.Command {
		ext := map[string]string{"b": "orders", "a": "pg", "c": "TBW102", "d": "4", "e": "0", "i": "KEYS\x01k1\x02", "z": `quote" back\slash é`}
		goClientSign(ext, []byte("hello"), "alice", sk)
		return remoting.NewRequest(remoting.SendMessageV2, ext, []byte("hello"))
	}
	for _, d := range frames(t, signed("s3cret")) {
		require.NoError(t, authenticate(a, d))
	}
	for name, cmd := range map[string]*remoting.Command{
		"wrong secret": signed("other"),
		"body changed": func() *remoting.Command { c := signed("s3cret"); c.Body = []byte("hellO"); return c }(),
		"field changed": func() *remoting.Command {
			c := signed("s3cret")
			c.ExtFields["b"] = "orderz"
			return c
		}(),
		"field added": func() *remoting.Command { c := signed("s3cret"); c.ExtFields["x"] = "1"; return c }(),
	} {
		for _, d := range frames(t, cmd) {
			var r *Refusal
			require.ErrorAs(t, authenticate(a, d), &r, name)
			require.Equal(t, "check signature failed.", r.Remark, name)
		}
	}
	c := signed("s3cret")
	c.ExtFields["AccessKey"] = "bob"
	require.EqualError(t, authenticate(a, c), "auth: User:bob is not found.")
	require.EqualError(t, authenticate(a, remoting.NewRequest(10, map[string]string{"topic": "t"}, nil)), "auth: username cannot be null.")
	require.NoError(t, a.Store().UpdateUser("alice", func(u *User) error { u.Disabled = true; return nil }))
	require.EqualError(t, authenticate(a, signed("s3cret")), "auth: User:alice is disabled.")
}

// TestSignCommand_MatchesTheGoClient: our signing (the broker's own
// requests) gives the Go client's signature.
func TestSignCommand_MatchesTheGoClient(t *testing.T) {
	ext := map[string]string{"topic": "t", "queueId": "3", "zz": ""}
	want := map[string]string{"topic": "t", "queueId": "3", "zz": ""}
	goClientSign(want, []byte("body"), "broker", "pw")
	cmd := remoting.NewRequest(remoting.RegisterBroker, ext, []byte("body"))
	SignCommand(cmd, "broker", "pw")
	require.Equal(t, want, cmd.ExtFields)
	SignCommand(cmd, "broker", "pw") // signing again gives the same
	require.Equal(t, want, cmd.ExtFields)
}

// TestRemotingContent_OldClientsUniqueKeyQuery: clients of version
// V4_9_3 and older added _UNIQUE_KEY_QUERY after signing: it is left out
// of their content, and kept for newer ones.
func TestRemotingContent_OldClientsUniqueKeyQuery(t *testing.T) {
	cmd := remoting.NewRequest(remoting.QueryMessage, map[string]string{"topic": "t", "_UNIQUE_KEY_QUERY": "true", "AccessKey": "u", "Signature": "x"}, nil)
	cmd.Version = 581
	content, ak, sig, ok := RemotingContent(cmd)
	require.True(t, ok)
	require.Equal(t, "ut", string(content))
	require.Equal(t, "u", ak)
	require.Equal(t, "x", sig)
	cmd.Version = 582
	content, _, _, _ = RemotingContent(cmd)
	require.Equal(t, "utruet", string(content))
}

// FuzzRemotingContent: for any frame the broker accepts, the signed
// content, AccessKey and Signature are the same whether the ext fields
// were decoded into a map or read raw (the two ways processors are
// registered), and reading them never panics.
func FuzzRemotingContent(f *testing.F) {
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		ext := map[string]string{"b": "orders", "a": "pg", "n\"k": "v\\\u00e9"}
		goClientSign(ext, []byte("x"), "alice", "pw")
		c := remoting.NewRequest(remoting.SendMessageV2, ext, []byte("x"))
		c.SerializeType = st
		b, _ := c.AppendFrame(nil)
		f.Add(b)
	}
	f.Add([]byte(`{"code":10,"extFields":{"AccessKey":"a","AccessKey":"b","k":null,"k":"v","Signature":null}}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err1 := remoting.Decode(frame)
		r, err2 := remoting.DecodeRawExt(frame)
		if err1 != nil || err2 != nil {
			return
		}
		c1, ak1, sig1, ok1 := RemotingContent(m)
		c2, ak2, sig2, ok2 := RemotingContent(r)
		if string(c1) != string(c2) || ak1 != ak2 || sig1 != sig2 || ok1 != ok2 {
			t.Fatalf("map: %q %q %q %v; raw: %q %q %q %v", c1, ak1, sig1, ok1, c2, ak2, sig2, ok2)
		}
	})
}

// TestFields_Get: the gate's sorted fields answer the mapper's lookups.
func TestFields_Get(t *testing.T) {
	cmd := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"b": "orders", "a": "pg", "bb": "x", "AccessKey": "u"}, nil)
	for _, d := range frames(t, cmd) {
		f := ReadFields(d)
		require.Equal(t, "orders", f.Get("b"))
		require.Equal(t, "pg", f.Get("a"))
		require.Equal(t, "x", f.Get("bb"))
		require.Equal(t, "u", f.Get("AccessKey"))
		require.Empty(t, f.Get("c"))
	}
	require.Empty(t, Fields{}.Get("b"))
}
