package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/netip"
	"strings"
)

// Metadata keys of a signed gRPC (RocketMQ 5) call.
const (
	AuthorizationMetadata = "authorization"
	DateTimeMetadata      = "x-mq-date-time"
)

// ParseV2Authorization reads the "authorization" metadata a RocketMQ 5
// client sends ("MQv2-HMAC-SHA1 Credential=<ak>[/...], SignedHeaders=
// x-mq-date-time, Signature=<hex>") as upstream's
// DefaultAuthenticationContextBuilder does: the scheme is not checked,
// every comma-separated item must be key=value, the username is what
// precedes the Credential's first '/', and the hex Signature is returned
// in base64 (what Authenticate compares). A missing Credential or
// Signature is not an error here: the empty username or signature is
// refused by Authenticate.
func ParseV2Authorization(s string) (username string, signature []byte, err error) {
	_, rest, ok := strings.Cut(s, " ")
	if !ok {
		return "", nil, refuse("authentication header is incorrect.")
	}
	for item := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return "", nil, refuse("authentication keyValues length is incorrect, actual length=1.")
		}
		switch k {
		case "Credential":
			username, _, _ = strings.Cut(v, "/")
		case "Signature":
			raw, err := hex.DecodeString(v)
			if err != nil {
				return "", nil, refuse("create authentication context error.")
			}
			signature = base64.StdEncoding.AppendEncode(nil, raw)
		}
	}
	return username, signature, nil
}

// CheckV2 decides a gRPC call as upstream's proxy pipeline does:
// authentication verifies the "authorization" metadata's signature of
// the "x-mq-date-time" value with the user's password; authorization
// asks checks (called only for a Normal user) what the call's message
// needs, from ip. Nil checks (a producer's heartbeat, a telemetry
// command other than Settings) need only a known user. The code white
// lists, of remoting request codes, do not apply.
func (a *Authority) CheckV2(authorization, datetime string, ip netip.Addr, checks func() ([]Check, error)) error {
	authn, authz := a.cfg.AuthenticationEnabled, a.cfg.AuthorizationEnabled
	if !authn && !authz {
		return nil
	}
	var user string
	var sig []byte
	if authorization != "" {
		var err error
		if user, sig, err = ParseV2Authorization(authorization); err != nil {
			return err
		}
	}
	if authn {
		if authorization == "" {
			return refuse("username cannot be null.")
		}
		if datetime == "" {
			return refuse("datetime is null.")
		}
		if err := a.Authenticate(user, sig, func(h hash.Hash) { h.Write([]byte(datetime)) }); err != nil {
			return err
		}
	}
	if !authz || a.IsSuper(user) {
		return nil
	}
	cs, err := checks()
	if err != nil {
		return refuse("%v", err)
	}
	return a.Authorize(user, cs, ip)
}

// SignV2 returns the "authorization" metadata a RocketMQ 5 client sends
// for a call stamped datetime ("20060102T150405Z"): the hex HMAC-SHA1 of
// datetime with secretKey, as the clients' Signature.sign computes it.
func SignV2(accessKey, secretKey, datetime string) string {
	m := hmac.New(sha1.New, []byte(secretKey))
	m.Write([]byte(datetime))
	return "MQv2-HMAC-SHA1 Credential=" + accessKey + ", SignedHeaders=" + DateTimeMetadata + ", Signature=" + hex.EncodeToString(m.Sum(nil))
}
