//go:build !race

// The browser test resets the offsets of a running Go push consumer,
// whose reset races with its own pulls (consumer/push_consumer.go
// ResetOffset): it runs without -race; make test runs it so.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/store"
)

// chromiumPath finds Debian's chromium (or another Chrome) on PATH, or
// in $CHROMIUM.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is a headless Chromium tab that records what a page must not
// do: throw, log an error to the console, or have a request fail.
type browser struct {
	t        *testing.T
	ctx      context.Context
	shots    string // folder of the screenshots
	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it): skipping the browser tests")
	}
	shots := os.Getenv("CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	t.Logf("screenshots of the console's pages go to %s (set CONSOLE_SCREENSHOTS to keep them elsewhere)", shots)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, shots: shots}
	// The first call starts the browser: no deadline on it (it would stop
	// the browser), but the test's own timeout.
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	require.NoError(t, err)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problem("exception: %s %s", e.ExceptionDetails.Text, e.ExceptionDetails.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				b.problem("console.error (%d arguments)", len(e.Args))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				b.problem("console: %s (%s)", e.Entry.Text, e.Entry.URL)
			}
		case *network.EventLoadingFailed:
			if !e.Canceled {
				b.problem("request failed: %s (%s)", e.ErrorText, e.Type)
			}
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				b.problem("%s answered %d", e.Response.URL, e.Response.Status)
			}
		}
	}))
	// The forms' confirm() questions are answered yes.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b
}

func (b *browser) problem(format string, args ...any) {
	b.mu.Lock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

// do runs steps with a deadline.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...))
}

// clean fails the test if the page threw, logged an error or had a
// request fail since the last check.
func (b *browser) clean(what string) {
	b.t.Helper()
	b.mu.Lock()
	p := b.problems
	b.problems = nil
	b.mu.Unlock()
	require.Empty(b.t, p, "%s: the page had errors", what)
}

// visit opens u, waits for the page, checks it is clean, and writes a
// screenshot named shot ("" for none).
func (b *browser) visit(u, shot string) {
	b.t.Helper()
	b.do(chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("main")))
	b.clean(u)
	b.screenshot(shot)
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	if name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644))
}

// text returns the text of the first element matching the CSS selector,
// "" when there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	q, _ := json.Marshal(sel)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var e=document.querySelector(`+string(q)+`);return e?e.innerText:""})()`))
	require.NoError(b.t, err, sel)
	return strings.TrimSpace(s)
}

// submit fills a form's fields and sends it, and waits for the page it
// leads to to show its flash message.
func (b *browser) submit(form string, fields map[string]string) string {
	b.t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	for name, v := range fields {
		steps = append(steps, chromedp.SetValue(chromedp.CSS(form+` [name="`+name+`"]`), v))
	}
	steps = append(steps, chromedp.Click(chromedp.CSS(form+` button`)), chromedp.WaitVisible(chromedp.CSS(`p.flash, p.error`)))
	b.do(steps...)
	if msg := b.text("main p"); strings.Contains(b.text("h1"), "Error") {
		b.t.Fatalf("sending %s: %s", form, msg)
	}
	b.clean("after sending " + form)
	return b.text("p.flash")
}

// until reloads u until cond holds for the text of sel on the page.
func (b *browser) until(u, sel string, cond func(string) bool, what string) string {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b.visit(u, "")
		got := b.text(sel)
		if cond(got) {
			return got
		}
		require.True(b.t, time.Now().Before(deadline), "%s: %s shows %q", what, sel, got)
		time.Sleep(200 * time.Millisecond)
	}
}

// TestConsole_InABrowser drives the console in headless Chromium against
// a running broker: creates a topic from the form, sees the TPS of a
// topic and the lag of a group (sent minus consumed), finds a message by
// key and opens it, resets a group's offsets by time so that a running
// consumer gets the messages again, resends a dead letter, and loads
// every page with no error in the console and no failed request, taking
// a screenshot of each.
func TestConsole_InABrowser(t *testing.T) {
	go buildMQAdmin() // meanwhile: the check of the topic list needs it
	b := newBrowser(t)
	began := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
	s := startSystem(t, store.Options{})
	base := startConsole(t, s, console.Options{})
	q := url.QueryEscape

	b.visit(base+"/", "")
	require.Equal(t, "1", b.text("#broker-count"))

	step("overview")
	// A topic created from the form is on the name server for mqadmin.
	topic := unique("BrowserT")
	b.visit(base+"/topics", "")
	flash := b.submit("#create-topic", map[string]string{"topic": topic, "readQueueNums": "2", "writeQueueNums": "2"})
	require.Contains(t, flash, "topic "+topic+" saved on 1 broker(s)")
	require.Contains(t, s.mqOK("topicList"), topic)
	require.Equal(t, "0", b.text("#topic-total"))

	step("topic created")
	// Sent minus consumed is the group's lag; the topic's TPS moves.
	resetAt := time.Now().Add(-time.Second)
	producerGroup := unique("BrowserPG")
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{s.nsAddr}), producer.WithGroupName(producerGroup),
		producer.WithInstanceName(unique("pi")), producer.WithRetry(2), producer.WithSendMsgTimeout(sendTimeout))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { p.Shutdown() })
	for i := range 20 {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("m-%d", i)))
		msg.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		_, err := p.SendSync(context.Background(), msg)
		require.NoError(t, err)
	}
	group := unique("BrowserG")
	first := newCollector()
	pcA := newPushConsumer(t, s, group, topic, "*", first)
	first.waitDistinct(t, "m-", 20, 30*time.Second)
	require.NoError(t, pcA.Shutdown()) // commits what it consumed
	sendN(t, p, topic, "n-", 7, nil)
	consumed := 0
	for _, n := range first.snapshot() {
		consumed += n
	}
	consumed = min(consumed, 20) // a redelivery is not a second consumption
	step("sent and consumed")
	b.until(base+"/topic?t="+q(topic), "#topic-total", func(s string) bool { return s == "27" }, "messages put")
	tps, err := strconv.ParseFloat(b.text("#topic-tps"), 64)
	require.NoError(t, err)
	require.Greater(t, tps, 0.0, "the topic's TPS after 27 sends")
	b.until(base+"/group?g="+q(group), "#group-lag", func(s string) bool { return s == strconv.Itoa(27-consumed) }, "the group's lag")
	b.screenshot("group-lag")

	step("TPS and lag seen")
	// A running consumer; a message it fails goes to the dead letters at
	// once (maxReconsumeTimes 0), one it gets again later it takes.
	second := newCollector()
	var failed sync.Map // bodies failed once
	second.reject = func(m *primitive.MessageExt) bool {
		_, again := failed.LoadOrStore(string(m.Body), true)
		return strings.HasPrefix(string(m.Body), "dead-") && !again
	}
	newPushConsumer(t, s, group, topic, "*", second, consumer.WithMaxReconsumeTimes(0))
	second.waitDistinct(t, "n-", 7, 30*time.Second)

	step("second consumer running")
	// Reset by time, from the group's page: the consumer gets m-* again.
	b.visit(base+"/group?g="+q(group), "")
	require.Equal(t, "1", b.text("#group-clients"))
	flash = b.submit("#reset-offset", map[string]string{"topic": topic, "time": resetAt.Format("2006-01-02T15:04:05")})
	require.Contains(t, flash, "reset 2 queue(s) of "+topic)
	require.Contains(t, flash, "online consumers were told")
	// The Go client takes up to 30 s to act on a reset: it sleeps 10 s
	// (pushConsumer.ResetOffset), then pulls again at its next rebalance
	// (every 20 s).
	second.waitDistinct(t, "m-", 20, 45*time.Second)

	step("reset: consumed again")
	// Search by key, open the message.
	b.visit(base+"/messages", "")
	b.do(chromedp.SetValue(chromedp.CSS(`#search-key [name="t"]`), topic), chromedp.SetValue(chromedp.CSS(`#search-key [name="k"]`), "key-3"),
		chromedp.Click(chromedp.CSS(`#search-key button`)), chromedp.WaitVisible(chromedp.CSS(`#found`)))
	b.clean("search by key")
	b.screenshot("messages")
	b.do(chromedp.Click(chromedp.CSS(`#found tbody a`)), chromedp.WaitVisible(chromedp.CSS(`#msg-keys`)))
	b.clean("open a message")
	require.Equal(t, "key-3", b.text("#msg-keys"))
	require.Equal(t, "m-3", b.text("#body"))
	b.screenshot("message")
	before := second.snapshot()["m-3"]
	flash = b.submit("#tracks tbody form", nil)
	require.Contains(t, flash, "CR_SUCCESS")
	require.Equal(t, before+1, second.snapshot()["m-3"], "resent to the running consumer")

	step("message found")
	// A dead letter, resent from the group's DLQ page, reaches the
	// consumer (CONSUME_MESSAGE_DIRECTLY), which takes it this time.
	sendN(t, p, topic, "dead", 1, nil)
	b.until(base+"/dlq?g="+q(group), "#dlq tbody", func(s string) bool { return strings.Contains(s, "dead-0") }, "the dead letter")
	flash = b.submit("#dlq tbody form", nil)
	require.Contains(t, flash, "as a retry: SEND_OK")
	require.Eventually(t, func() bool { return second.snapshot()["dead-0"] == 2 }, 20*time.Second, 50*time.Millisecond,
		"the dead letter, failed once, comes again once resent: %v", second.snapshot())

	step("dead letter resent")
	// Every page, with a screenshot.
	for _, pg := range []struct{ path, shot string }{
		{"/", "overview"},
		{"/broker?addr=" + q(s.b.Addr()), "broker"},
		{"/topics", "topics"},
		{"/topic?t=" + q(topic), "topic"},
		{"/groups", "groups"},
		{"/messages?mode=topic&t=" + q(topic), "messages-by-time"},
		{"/dlq?g=" + q(group), "dlq"},
		{"/topic?t=" + q("%DLQ%"+group), "dlq-topic"},
		{"/producers?t=" + q(topic) + "&g=" + q(producerGroup), "producers"},
	} {
		b.visit(base+pg.path, pg.shot)
	}
	require.Contains(t, b.text("#producers tbody"), "GO", "the producer's connection")
	step("every page")
}
