package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/store"
)

// startConsole serves a console over the system's name server on a
// loopback port (so writes are allowed) and returns its URL.
func startConsole(t *testing.T, s *system, opts console.Options) string {
	t.Helper()
	ac, err := admin.New(admin.Options{NamesrvAddrs: []string{s.nsAddr}, Timeout: 10 * time.Second})
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

// TestConsole_ListPagesAtScale starts a broker with 25,000 topics and
// 10,000 consumer groups (its topics.json and subscriptionGroup.json
// written before it starts) and checks that the list pages, and the pages
// of one topic and one group, are drawn in less than 200 ms of server
// time: the lists ask only about the rows they show.
func TestConsole_ListPagesAtScale(t *testing.T) {
	const topics, groups = 25000, 10000
	s := startSystem(t, store.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.b.Shutdown(ctx))
	s.b = nil
	writeScaleConfig(t, filepath.Join(s.storeDir, "config"), topics, groups)
	start := time.Now()
	s.startBroker()
	s.waitRoute(fmt.Sprintf("ScaleTopic%05d", topics-1))
	t.Logf("broker with %d topics and %d groups registered in %v", topics, groups, time.Since(start).Round(time.Millisecond))
	base := startConsole(t, s, console.Options{})

	q := url.QueryEscape
	paths := []string{
		"/topics", "/topics?page=400", "/topics?q=" + q("ScaleTopic1234"), "/topics?kind=all&page=250",
		"/groups", "/groups?page=150", "/groups?q=" + q("ScaleGroup0042"),
		"/", "/topic?t=ScaleTopic00042", "/group?g=ScaleGroup00042",
	}
	for _, path := range paths {
		var best time.Duration
		var times []string
		for i := range 3 {
			p := getPage(t, base+path)
			require.Equal(t, http.StatusOK, p.status, "%s: %s", path, p.body)
			require.NotContains(t, p.body, `class="error"`, path)
			if i == 0 || p.server < best {
				best = p.server
			}
			times = append(times, p.server.Round(100*time.Microsecond).String()+" ("+p.timing+")")
		}
		t.Logf("%-32s server time %s", path, strings.Join(times, "; "))
		require.Less(t, best, 200*time.Millisecond, "%s took %v at best of 3", path, best)
	}
	p := getPage(t, base+"/topics?q="+q("ScaleTopic2499"))
	require.Contains(t, p.body, "10 topics, 1–10") // ScaleTopic24990..24999
	p = getPage(t, base+"/groups?page=200")
	require.Contains(t, p.body, "ScaleGroup09999")
}

// writeScaleConfig writes topics.json and subscriptionGroup.json with n
// topics and g groups, in the form RocketMQ's broker writes them.
func writeScaleConfig(t *testing.T, dir string, n, g int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var b strings.Builder
	b.WriteString(`{"topicConfigTable":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"ScaleTopic%05d":{"topicName":"ScaleTopic%05d","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}`, i, i)
	}
	b.WriteString(`},"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000}}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "topics.json"), []byte(b.String()), 0o644))
	b.Reset()
	b.WriteString(`{"subscriptionGroupTable":{`)
	for i := range g {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"ScaleGroup%05d":{"groupName":"ScaleGroup%05d","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true}`, i, i)
	}
	b.WriteString(`},"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000}}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subscriptionGroup.json"), []byte(b.String()), 0o644))
}
