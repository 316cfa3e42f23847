package console

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/client/admin"
)

// newTestConsole is a console whose name server does not answer (a port
// nobody listens on): enough for what is checked before any call.
func newTestConsole(t *testing.T, w WritePolicy) *Console {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	ac, err := admin.New(admin.Options{NamesrvAddrs: []string{addr}, Timeout: time.Second})
	require.NoError(t, err)
	c, err := New(Options{Admin: ac, Writes: w, BasePath: "/console"})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		ac.Close()
	})
	return c
}

func TestParseWritePolicy(t *testing.T) {
	for in, want := range map[string]WritePolicy{"": WritesLoopback, "loopback": WritesLoopback, "true": WritesAll, "ALL": WritesAll, "false": WritesNone, "none": WritesNone} {
		got, err := ParseWritePolicy(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		again, err := ParseWritePolicy(got.String())
		require.NoError(t, err)
		require.Equal(t, got, again)
	}
	_, err := ParseWritePolicy("maybe")
	require.Error(t, err)
}

func TestFromLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, remote, host string
		hdr                map[string]string
		want               bool
	}{
		{"ipv4 loopback", "127.0.0.1:5555", "127.0.0.1:8080", nil, true},
		{"ipv6 loopback", "[::1]:5555", "[::1]:8080", nil, true},
		{"localhost", "127.0.0.1:5555", "localhost:8080", nil, true},
		{"remote peer", "10.1.2.3:5555", "127.0.0.1:8080", nil, false},
		{"rebound name", "127.0.0.1:5555", "evil.example:8080", nil, false},
		{"through a proxy", "127.0.0.1:5555", "127.0.0.1:8080", map[string]string{"X-Forwarded-For": "10.1.2.3"}, false},
		{"forwarded", "127.0.0.1:5555", "127.0.0.1:8080", map[string]string{"Forwarded": "for=10.1.2.3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr, r.Host = tc.remote, tc.host
			for k, v := range tc.hdr {
				r.Header.Set(k, v)
			}
			require.Equal(t, tc.want, fromLoopback(r))
		})
	}
}

// csrfOf gets a page (which fails: no name server) for its CSRF cookie
// and token.
func csrfOf(t *testing.T, c *Console) (*http.Cookie, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/console/topics", nil)
	req.RemoteAddr = "127.0.0.1:1234"
	c.ServeHTTP(rec, req)
	cookies := rec.Result().Cookies()
	require.Len(t, cookies, 1)
	require.True(t, cookies[0].HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, cookies[0].SameSite)
	return cookies[0], c.sign(cookies[0].Value)
}

func post(c *Console, path, remote string, form url.Values, ck *http.Cookie, hdr map[string]string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr, req.Host = remote, "127.0.0.1:8080"
	if ck != nil {
		req.AddCookie(ck)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c.ServeHTTP(rec, req)
	return rec
}

func TestConsole_WritesNeedPolicyOriginAndToken(t *testing.T) {
	c := newTestConsole(t, WritesLoopback)
	ck, token := csrfOf(t, c)
	form := url.Values{"topic": {"T"}, "cluster": {"DefaultCluster"}, "csrf": {token}}
	const local = "127.0.0.1:4444"

	rec := post(c, "/console/topic/update", "192.0.2.7:4444", form, ck, nil)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, rec.Body.String(), "loopback interface only")

	rec = post(c, "/console/topic/update", local, url.Values{"topic": {"T"}}, ck, nil)
	require.Equal(t, http.StatusForbidden, rec.Code, "no token")
	require.Contains(t, rec.Body.String(), "CSRF")

	bad := url.Values{"topic": {"T"}, "csrf": {strings.Repeat("0", 64)}}
	rec = post(c, "/console/topic/update", local, bad, ck, nil)
	require.Equal(t, http.StatusForbidden, rec.Code, "wrong token")

	rec = post(c, "/console/topic/update", local, form, nil, nil)
	require.Equal(t, http.StatusForbidden, rec.Code, "no cookie")

	rec = post(c, "/console/topic/update", local, form, ck, map[string]string{"Origin": "http://evil.example"})
	require.Equal(t, http.StatusForbidden, rec.Code, "another origin")

	// Past the checks, the write fails only at the name server.
	rec = post(c, "/console/topic/update", local, form, ck, map[string]string{"Origin": "http://127.0.0.1:8080"})
	require.Equal(t, http.StatusBadGateway, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "cannot reach the name server")

	none := newTestConsole(t, WritesNone)
	ck2, token2 := csrfOf(t, none)
	form.Set("csrf", token2)
	rec = post(none, "/console/topic/update", local, form, ck2, nil)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, rec.Body.String(), "consoleWrite=false")
}

func TestConsole_BadInputIsA400WithWhy(t *testing.T) {
	c := newTestConsole(t, WritesAll)
	ck, token := csrfOf(t, c)
	rec := post(c, "/console/topic/update", "192.0.2.7:1", url.Values{"topic": {"a b<script>"}, "csrf": {token}}, ck, nil)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, "may hold only letters")
	require.NotContains(t, body, "<script>")
	require.Contains(t, body, "&lt;script&gt;")
	require.Equal(t, "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
		rec.Header().Get("Content-Security-Policy"))
}

func TestConsole_StaticAssetsAreEmbedded(t *testing.T) {
	c := newTestConsole(t, WritesLoopback)
	for path, typ := range map[string]string{"/console/static/console.css": "text/css", "/console/static/console.js": "javascript", "/console/static/favicon.svg": "image/svg"} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Contains(t, rec.Header().Get("Content-Type"), typ, path)
		require.NotZero(t, rec.Body.Len())
	}
}

func TestSecretKey(t *testing.T) {
	for _, k := range []string{"secretKey", "accessKey", "password", "authToken"} {
		require.True(t, secretKey(k), k)
	}
	for _, k := range []string{"brokerName", "listenPort", "storePathRootDir"} {
		require.False(t, secretKey(k), k)
	}
	kvs := sortedKV(map[string]string{"secretKey": "s3cr3t", "brokerName": "b", "initAuthenticationUser": `{"username":"root","password":"p"}`,
		"someNewKey": `{"accessKey":"a","secretKey":"s"}`})
	require.Equal(t, []kv{{"brokerName", "b"}, {"initAuthenticationUser", "******"}, {"secretKey", "******"}, {"someNewKey", "******"}}, kvs)
}

func TestParseWhen(t *testing.T) {
	got, err := parseWhen("2026-01-02T03:04:05", "-60") // UTC+1
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC).UnixMilli(), got)
	got, err = parseWhen("1700000000000", "")
	require.NoError(t, err)
	require.EqualValues(t, 1700000000000, got)
	_, err = parseWhen("yesterday", "")
	require.Error(t, err)
}

func TestPaginate(t *testing.T) {
	p := paginate(120, 3, func(p int) string { return "p" + string(rune('0'+p)) })
	require.Equal(t, pager{Page: 3, Pages: 3, Total: 120, From: 100, To: 120, Prev: "p2"}, p)
	p = paginate(0, 5, func(int) string { return "x" })
	require.Equal(t, 1, p.Pages)
	require.Equal(t, 0, p.To)
}

func TestConsole_FlashNeedsTheConsolesSignature(t *testing.T) {
	c := newTestConsole(t, WritesLoopback)
	r := httptest.NewRequest("GET", "/console/topics?flash=forged", nil)
	require.Empty(t, c.flash(r))
	signed := "/console/topics?flash=" + url.QueryEscape("topic T saved") + "&fs=" + c.sign("flash:topic T saved")[:32]
	require.Equal(t, "topic T saved", c.flash(httptest.NewRequest("GET", signed, nil)))
}
