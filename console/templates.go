package console

import (
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"time"
)

// parseTemplates parses each page with the layout.
func parseTemplates(base string) (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"base":    func() string { return base },
		"time":    fmtMillis,
		"short":   short,
		"f1":      func(v float64) string { return ftoa(v, 1) },
		"pct":     func(v float64) string { return ftoa(100*v, 1) + "%" },
		"bytes":   humanBytes,
		"add":     func(a, b int) int { return a + b },
		"link":    link,
		"esc":     url.QueryEscape,
		"kindOf":  topicKind,
		"nonzero": func(v int64) bool { return v != 0 },
		"list":    func(v ...string) []string { return v },
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimPrefix(n, "templates/")
		if name == "layout.html" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// link builds base+path?k=v&... from pairs, skipping empty values.
func link(path string, kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v != "" {
			q.Set(fmt.Sprint(kv[i]), v)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func queryEscape(s string) string { return url.QueryEscape(s) }

// fmtMillis writes a Java timestamp (ms) as local time; 0 or less as -.
func fmtMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05.000")
}

// humanBytes writes a byte count in binary units.
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= 1024 && i < 6 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i-1])
}
