package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// TestConsole_LogsInWithAUserOfTheACL runs cmd/broker with access control
// and its console: pages ask for a login; a wrong password is refused by
// the broker; the Super user sees the cluster and creates a topic; a
// normal user acts with its own rights: what its policy allows works, the
// rest is refused by the broker, and no page shows a password.
func TestConsole_LogsInWithAUserOfTheACL(t *testing.T) {
	port := freePort(t)
	b := startAuthBroker(t, fmt.Sprintf("metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort=%d\n", port), false)
	b.createTopic("orders")
	b.root(remoting.AuthCreateUser, map[string]string{"username": aliceUser}, auth.UserInfo{Password: alicePass, UserType: "Normal"})
	b.root(remoting.AuthCreateACL, map[string]string{"subject": "User:" + aliceUser}, auth.AclInfo{Subject: "User:" + aliceUser,
		Policies: []auth.PolicyInfo{{PolicyType: "Custom", Entries: []auth.EntryInfo{
			{Resource: "Topic:orders", Actions: []string{"Pub", "Sub", "Get"}, Decision: "Allow"},
		}}}})
	base := fmt.Sprintf("http://127.0.0.1:%d/console", port)

	type browser struct{ c *http.Client }
	newSession := func() browser {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		return browser{&http.Client{Jar: jar, Timeout: 20 * time.Second}}
	}
	get := func(s browser, path string) (int, string, string) {
		resp, err := s.c.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Request.URL.Path, string(body)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	post := func(s browser, page, path string, form url.Values) (int, string) {
		_, _, body := get(s, page)
		m := csrf.FindStringSubmatch(body)
		require.NotNil(t, m, "no form on %s: %s", page, body)
		form.Set("csrf", m[1])
		resp, err := s.c.PostForm(base+path, form)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	login := func(user, pass string) (browser, int, string) {
		s := newSession()
		code, body := post(s, "/login", "/login", url.Values{"username": {user}, "password": {pass}, "next": {"/"}})
		return s, code, body
	}

	anon := newSession()
	code, path, _ := get(anon, "/topics")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "/console/login", path, "a page asks for a login first")

	_, code, body := login(aliceUser, "wrong-secret")
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Contains(t, body, "check signature failed")

	root, code, body := login(rootUser, rootPass)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, b.addr, "the overview, as the Super user")
	code, body = post(root, "/topics", "/topic/update", url.Values{"topic": {"made_by_root"}, "cluster": {"AuthCluster"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "topic made_by_root saved on 1 broker(s)")

	alice, code, body := login(aliceUser, alicePass)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "has no permission", "the overview's broker figures are for Super users")
	code, _, body = get(alice, "/topic?t=orders")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `id="topic-total"`)
	code, body = post(alice, "/topic?t=orders", "/topic/send", url.Values{"topic": {"orders"}, "body": {"from the console"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "sent: SEND_OK")
	code, body = post(alice, "/topics", "/topic/update", url.Values{"topic": {"made_by_alice"}, "cluster": {"AuthCluster"}})
	require.NotEqual(t, http.StatusOK, code)
	require.Contains(t, body, "has no permission")
	for _, s := range []browser{root, alice} {
		for _, p := range []string{"/", "/topics", "/groups?sys=1", "/broker?addr=" + url.QueryEscape(b.addr)} {
			_, _, body := get(s, p)
			require.False(t, strings.Contains(body, rootPass) || strings.Contains(body, alicePass), "%s shows a password", p)
		}
	}
	code, body = post(alice, "/", "/logout", url.Values{})
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `id="login"`)
}
