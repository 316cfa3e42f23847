package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

func TestStatOf_MedianAndSpread(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        []float64
		med, sprd float64
	}{
		{"odd", []float64{3, 1, 2}, 2, 100},
		{"even", []float64{4, 1, 2, 3}, 2.5, 120},
		{"one", []float64{7}, 7, 0},
		{"none", nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := statOf(tc.in)
			if s.med != tc.med || s.spread() != tc.sprd {
				t.Fatalf("median %v spread %v, want %v %v", s.med, s.spread(), tc.med, tc.sprd)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i))
	}
	if p := percentile(d, 0.5); p != 51 {
		t.Fatalf("p50 %v", p)
	}
	if p := percentile(d, 0.99); p != 100 {
		t.Fatalf("p99 %v", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Fatalf("empty: %v", p)
	}
}

func TestSplitComma(t *testing.T) {
	got := strings.Join(splitComma("a,,b,c,"), "|")
	if got != "a|b|c" {
		t.Fatalf("got %q", got)
	}
}

func TestComputeRatios_PairsRounds(t *testing.T) {
	r := newResults()
	for i, v := range []float64{100, 200, 300} {
		r.add(row{id: "rs.put.1KiB.w16"}, sample{ops: v, secs: 1})
		r.add(row{id: "nats.async.1KiB.p16"}, sample{ops: []float64{50, 100, 100}[i], secs: 1})
	}
	rs := computeRatios(r)
	if len(rs) != 1 || rs[0].name != "store_put_vs_nats_async" {
		t.Fatalf("ratios %+v", rs)
	}
	// per round: 2, 2, 3
	if rs[0].val.med != 2 || rs[0].val.max != 3 {
		t.Fatalf("ratio %+v", rs[0].val)
	}
}

func TestSVGChart_WellFormed(t *testing.T) {
	svg := svgChart([]ratio{
		{ratioDef{name: "a", kind: "NATS JetStream", headline: true}, stat{med: 3, min: 2, max: 5, n: 3}},
		{ratioDef{name: "b", kind: "ceiling"}, stat{med: 0.02, min: 0.01, max: 0.03, n: 3}},
	})
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, svg)
		}
	}
}
