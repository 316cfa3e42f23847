package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// chart draws a line chart of samples over the last span as inline SVG.
// The SVG is made here from numbers and escaped text only, so it is safe
// to put in a page as is.
func chart(title, unit string, pts []point, span time.Duration, now time.Time) template.HTML {
	const w, h, left, right, top, bottom = 640, 170, 52, 10, 22, 24
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	end := now.UnixMilli()
	start := end - span.Milliseconds()
	maxV := 0.0
	var in []point
	for _, p := range pts {
		if p.T >= start && p.T <= end {
			in = append(in, p)
			maxV = math.Max(maxV, p.V)
		}
	}
	maxV = niceCeil(maxV)
	x := func(t int64) float64 { return float64(left) + pw*float64(t-start)/float64(end-start) }
	y := func(v float64) float64 { return float64(top) + ph - ph*v/maxV }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		w, h, html.EscapeString(title))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="14">%s</text>`, left, html.EscapeString(title))
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		yy := y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, left, yy, w-right, yy)
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-4, yy+4, html.EscapeString(short(v)))
	}
	mins := int(span.Minutes())
	for i := 0; i <= 4; i++ {
		t := start + (end-start)*int64(i)/4
		label := "now"
		if i < 4 {
			label = fmt.Sprintf("-%dm", mins-mins*i/4)
		}
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t), h-6, label)
	}
	switch len(in) {
	case 0:
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">no samples yet</text>`, left+int(pw)/2, top+int(ph)/2)
	case 1:
		fmt.Fprintf(&b, `<circle class="dot" cx="%.1f" cy="%.1f" r="3"/>`, x(in[0].T), y(in[0].V))
	default:
		b.WriteString(`<polyline class="line" points="`)
		for i, p := range in {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(p.T), y(p.V))
		}
		b.WriteString(`"/>`)
	}
	if n := len(in); n > 0 {
		fmt.Fprintf(&b, `<text class="last" x="%d" y="14" text-anchor="end">%s %s</text>`, w-right, html.EscapeString(short(in[n-1].V)), html.EscapeString(unit))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// short writes a figure in a few characters: 950, 1.2k, 3.4M.
func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return ftoa(v/1e9, 1) + "G"
	case a >= 1e6:
		return ftoa(v/1e6, 1) + "M"
	case a >= 1e4:
		return ftoa(v/1e3, 1) + "k"
	case a == math.Trunc(a):
		return ftoa(v, 0)
	}
	return ftoa(v, 1)
}
