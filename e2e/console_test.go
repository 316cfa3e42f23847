package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// startConsole serves a console over the system's name server on a
// loopback port (so writes are allowed) and returns its URL. hook, when
// set, sees every request the console sends.
func startConsole(t *testing.T, s *system, opts console.Options, hook ...func(*remoting.Command)) string {
	t.Helper()
	aopts := admin.Options{NamesrvAddrs: []string{s.nsAddr}, Timeout: 10 * time.Second}
	if len(hook) > 0 {
		aopts.Remoting.BeforeRequest = hook[0]
	}
	ac, err := admin.New(aopts)
	require.NoError(t, err)
	opts.Admin = ac
	con, err := console.New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(con)
	t.Cleanup(func() {
		srv.Close()
		con.Close()
		ac.Close()
	})
	return srv.URL + opts.BasePath
}

// consolePage is one GET of a console page.
type consolePage struct {
	status int
	body   string
	server time.Duration // the Server-Timing the console reports
	timing string        // all its parts
}

var serverTiming = regexp.MustCompile(`app;dur=([0-9.]+)`)

func getPage(t *testing.T, u string) consolePage {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := consolePage{status: resp.StatusCode, body: string(b), timing: strings.Join(resp.Header.Values("Server-Timing"), ", ")}
	if m := serverTiming.FindStringSubmatch(p.timing); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		p.server = time.Duration(ms * float64(time.Millisecond))
	}
	return p
}

// TestConsole_EveryPageOverARealBroker reads each page of the console
// over a running broker, with a topic whose messages and names carry
// HTML, and checks what they show and that nothing is unescaped.
func TestConsole_EveryPageOverARealBroker(t *testing.T) {
	s := startSystem(t, store.Options{})
	base := startConsole(t, s, console.Options{BasePath: "/console"})
	topic := unique("ConsoleT")
	s.mqOK("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4")
	s.waitRoute(topic)
	s.mqOK("sendMessage", "-t", topic, "-p", `<script>alert("x")</script>`, "-k", "key<1>", "--count", "3")

	q := url.QueryEscape
	brokerAddr := s.b.Addr()
	for _, tc := range []struct{ path, want string }{
		{"/", brokerAddr},
		{"/broker?addr=" + q(brokerAddr), "brokerClusterName"},
		{"/topics?q=" + q(topic), topic},
		{"/topics?kind=system", "TBW102"},
		{"/topic?t=" + q(topic), `id="topic-total">3<`},
		{"/groups?sys=1", "TOOLS_CONSUMER"},
		{"/group?g=TOOLS_CONSUMER", "Lag per queue"},
		{"/producers?t=" + q(topic) + "&g=nobody", "No producer of group nobody"},
		{"/messages?mode=key&t=" + q(topic) + "&k=" + q("key<1>"), "key&lt;1&gt;"},
		{"/messages?mode=topic&t=" + q(topic), "&lt;script&gt;"},
		{"/dlq?g=nobody", "no dead-letter topic"},
	} {
		p := getPage(t, base+tc.path)
		require.Equal(t, http.StatusOK, p.status, "%s: %s", tc.path, p.body)
		require.Contains(t, p.body, tc.want, tc.path)
		require.NotContains(t, p.body, "<script>alert", tc.path)
		require.NotContains(t, p.body, `class="error"`, tc.path)
	}
	// A message, opened from the search, as text and as hex.
	found := getPage(t, base+"/messages?mode=key&t="+q(topic)+"&k="+q("key<1>"))
	m := regexp.MustCompile(`href="(/console/message\?[^"]+)"`).FindStringSubmatch(found.body)
	require.NotNil(t, m, found.body)
	link := strings.ReplaceAll(m[1], "&amp;", "&")
	msg := getPage(t, strings.TrimSuffix(base, "/console")+link)
	require.Equal(t, http.StatusOK, msg.status, msg.body)
	require.Contains(t, msg.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	hexPage := getPage(t, strings.TrimSuffix(base, "/console")+link+"&body=hex")
	require.Contains(t, hexPage.body, "3c 73 63 72 69 70 74 3e") // <script>

	// Pages about what does not exist say so.
	for _, path := range []string{"/topic?t=NoSuchTopic", "/broker?addr=" + q("10.9.9.9:10911")} {
		require.Equal(t, http.StatusNotFound, getPage(t, base+path).status, path)
	}
	require.Equal(t, http.StatusBadRequest, getPage(t, base+"/message?id=nonsense").status)
}
