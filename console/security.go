package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// WritePolicy says which requests may change anything (create, update,
// delete, reset, send, resend). Reads are always allowed.
type WritePolicy int

const (
	// WritesLoopback allows writes from the loopback interface only, to a
	// loopback host name, not through a proxy: the default.
	WritesLoopback WritePolicy = iota
	// WritesAll allows writes from anywhere.
	WritesAll
	// WritesNone makes the console read-only.
	WritesNone
)

// ParseWritePolicy reads a policy as the consoleWrite broker.conf key and
// cmd/dashboard's -write flag give it: loopback, true (or all), false (or
// none).
func ParseWritePolicy(s string) (WritePolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "loopback":
		return WritesLoopback, nil
	case "true", "all":
		return WritesAll, nil
	case "false", "none":
		return WritesNone, nil
	}
	return 0, fmt.Errorf("console: write policy %q is not loopback, true or false", s)
}

// String names the policy as ParseWritePolicy reads it.
func (p WritePolicy) String() string {
	switch p {
	case WritesAll:
		return "true"
	case WritesNone:
		return "false"
	}
	return "loopback"
}

// canWrite reports whether r may change anything under the policy; with
// a login, whether it comes from a logged-in user (whose policies the
// brokers then apply).
func (c *Console) canWrite(r *http.Request) bool {
	if c.opts.Login != nil {
		return c.session(r) != nil
	}
	switch c.opts.Writes {
	case WritesAll:
		return true
	case WritesNone:
		return false
	}
	return fromLoopback(r)
}

// fromLoopback: the peer is on the loopback interface, the request names
// a loopback host (a page of another site that rebinds its name to
// 127.0.0.1 does not), and no proxy forwarded it for someone else.
func fromLoopback(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" || r.Header.Get("X-Real-Ip") != "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return false
	}
	return loopbackHost(r.Host)
}

func loopbackHost(hostport string) bool {
	h := hostport
	if sh, _, err := net.SplitHostPort(hostport); err == nil {
		h = sh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

const csrfCookie = "rocketstore_console_csrf"

// csrfToken returns the token the page's forms carry: an HMAC of the
// browser's CSRF cookie, which it sets when missing.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) != 32 {
		b := make([]byte, 16)
		rand.Read(b)
		ck = &http.Cookie{Name: csrfCookie, Value: hex.EncodeToString(b), Path: c.opts.BasePath + "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
		http.SetCookie(w, ck)
	}
	return c.sign(ck.Value)
}

func (c *Console) sign(v string) string {
	m := hmac.New(sha256.New, c.csrfKey)
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of a refused write.
var (
	ErrReadOnly = errors.New("console: this console is read-only for you")
	ErrCSRF     = errors.New("console: the form's CSRF token does not match: reload the page and try again")
)

// checkWrite refuses a form post that the policy does not allow, that
// comes from another origin, or whose CSRF token does not match.
func (c *Console) checkWrite(r *http.Request) error {
	if !c.canWrite(r) {
		why := "writes are turned off (consoleWrite=false)"
		switch {
		case c.opts.Login != nil:
			why = "log in first"
		case c.opts.Writes == WritesLoopback:
			why = "writes are allowed from the loopback interface only (consoleWrite=loopback; set consoleWrite=true to allow all)"
		}
		return fmt.Errorf("%w: %s", ErrReadOnly, why)
	}
	return c.checkOriginAndToken(r)
}

// checkOriginAndToken refuses a form post from another origin or whose
// CSRF token does not match.
func (c *Console) checkOriginAndToken(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("%w (the form came from %s)", ErrCSRF, o)
		}
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil {
		return ErrCSRF
	}
	if !hmac.Equal([]byte(c.sign(ck.Value)), []byte(r.PostFormValue("csrf"))) {
		return ErrCSRF
	}
	return nil
}

// secretKey reports whether a config key names a secret, whose value is
// never shown (initAuthenticationUser holds a password, ...Credentials a
// secret key).
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"secret", "password", "passwd", "accesskey", "token", "credential", "privatekey", "authenticationuser"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// secretValue reports whether a config value carries a secret whatever
// its key: JSON with a password or a secret key in it.
func secretValue(v string) bool {
	v = strings.ToLower(v)
	return strings.Contains(v, `"password"`) || strings.Contains(v, `"secretkey"`)
}
