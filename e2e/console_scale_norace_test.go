//go:build !race

// The console's page timings at scale mean something only without the
// race detector (it slows every call tenfold); make test runs this so.

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// TestConsole_ListPagesAtScale starts a broker with 25,000 topics and
// 10,000 consumer groups (its topics.json and subscriptionGroup.json
// written before it starts) and checks that the list pages, and the pages
// of one topic and one group, ask only about the rows they show (the
// requests each page sends are counted) and are drawn in less than
// 200 ms of server time. The time is asserted on a machine that is not
// overloaded (load average up to twice the CPUs); on one that is, it is
// logged.
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

	var requests atomic.Int64 // sent by the console
	base := startConsole(t, s, console.Options{SampleInterval: time.Hour}, func(*remoting.Command) { requests.Add(1) })
	getPage(t, base+"/topics") // the lists of names, fetched once
	getPage(t, base+"/groups")

	overloaded := loadAverage() > 2*float64(runtime.NumCPU())
	q := url.QueryEscape
	for _, tc := range []struct {
		path     string
		requests int64 // at most, whatever the number of topics and groups
	}{
		{"/topics", 60}, {"/topics?page=400", 60}, {"/topics?q=" + q("ScaleTopic1234"), 60}, {"/topics?kind=all&page=250", 60},
		{"/groups", 120}, {"/groups?page=150", 120}, {"/groups?q=" + q("ScaleGroup0042"), 120},
		{"/", 10}, {"/topic?t=ScaleTopic00042", 10}, {"/group?g=ScaleGroup00042", 10},
	} {
		var best time.Duration
		var times []string
		var most int64
		for i := range 5 {
			before := requests.Load()
			p := getPage(t, base+tc.path)
			n := requests.Load() - before
			require.Equal(t, http.StatusOK, p.status, "%s: %s", tc.path, p.body)
			require.NotContains(t, p.body, `class="error"`, tc.path)
			require.LessOrEqual(t, n, tc.requests+3, "%s sent %d requests (+3: a background refresh of the names)", tc.path, n)
			most = max(most, n)
			if i == 0 || p.server < best {
				best = p.server
			}
			times = append(times, p.server.Round(100*time.Microsecond).String())
		}
		t.Logf("%-32s server time %s; at most %d requests", tc.path, strings.Join(times, " "), most)
		if overloaded {
			t.Logf("%s: %v at best of 5, not asserted: load average %.1f on %d CPUs", tc.path, best, loadAverage(), runtime.NumCPU())
			continue
		}
		require.Less(t, best, 200*time.Millisecond, "%s took %v at best of 5", tc.path, best)
	}
	p := getPage(t, base+"/topics?q="+q("ScaleTopic2499"))
	require.Contains(t, p.body, "10 topics, 1–10") // ScaleTopic24990..24999
	p = getPage(t, base+"/groups?page=200")
	require.Contains(t, p.body, "ScaleGroup09999")
}

// loadAverage is the one-minute load average (0 where /proc has none).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
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
