package console

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestChart_IsWellFormedSVGWithEscapedText(t *testing.T) {
	now := time.Now()
	var pts []point
	for i := range 10 {
		pts = append(pts, point{now.Add(time.Duration(i-10) * time.Minute).UnixMilli(), float64(i * 7)})
	}
	for _, in := range [][]point{nil, pts[:1], pts} {
		svg := string(chart(`TPS of <script>&"x"`, "msg/s", in, time.Hour, now))
		require.NotContains(t, svg, "<script>")
		require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{})), svg)
	}
	svg := string(chart("t", "u", pts, time.Hour, now))
	require.Contains(t, svg, "<polyline")
	require.Contains(t, svg, ">63 u<") // the last value
	require.Equal(t, 1, strings.Count(svg, "<polyline"))
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.5: 1, 3: 5, 7: 10, 12: 20, 99: 100, 101: 200, 4500: 5000} {
		require.Equal(t, want, niceCeil(in), in)
	}
}

func TestHistory_KeepsAnHourAndRates(t *testing.T) {
	h := newHistory(time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		h.add("k", t0.Add(time.Duration(i)*time.Minute), float64(i*60))
	}
	pts := h.get("k")
	require.Len(t, pts, 61) // minutes 39..99
	require.Equal(t, t0.Add(39*time.Minute).UnixMilli(), pts[0].T)
	r, ok := lastRate(pts)
	require.True(t, ok)
	require.InDelta(t, 1.0, r, 1e-9)
	h.add("k", t0.Add(100*time.Minute), 0) // a counter that went back
	require.Len(t, rates(h.get("k")), 59)
	_, ok = lastRate(h.get("none"))
	require.False(t, ok)
}

func TestHistory_WatchesTheMostRecent(t *testing.T) {
	h := newHistory(time.Hour)
	t0 := time.Now()
	for i := range maxWatched + 5 {
		h.watch("topic:"+string(rune('A'+i)), t0.Add(time.Duration(i)*time.Second))
	}
	keys := h.watchedKeys(t0.Add(time.Minute))
	require.Len(t, keys, maxWatched)
	require.NotContains(t, keys, "topic:A")
	require.Empty(t, h.watchedKeys(t0.Add(2*time.Hour)))
}
