package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// output prints a subcommand's result: aligned tables, or with --json one
// JSON document.
type output struct {
	w    io.Writer
	json bool
}

// table is rows under a header; each header cell gets RocketMQ's '#'.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, row)
}

// print writes v as JSON, or else the tables and then the lines.
func (o *output) print(v any, tables []*table, lines ...string) error {
	if o.json {
		enc := json.NewEncoder(o.w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(o.w)
		}
		var buf bytes.Buffer
		tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
		hdr := make([]string, len(t.header))
		for j, h := range t.header {
			hdr[j] = "#" + h
		}
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
		for _, r := range t.rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
		for line := range strings.Lines(buf.String()) {
			if _, err := io.WriteString(o.w, strings.TrimRight(line, " \n")+"\n"); err != nil {
				return err
			}
		}
	}
	if len(lines) > 0 && len(tables) > 0 {
		fmt.Fprintln(o.w)
	}
	for _, l := range lines {
		fmt.Fprintln(o.w, l)
	}
	return nil
}

// formatMillis formats a timestamp in ms as RocketMQ's tools do
// (yyyy-MM-dd HH:mm:ss,SSS), "N/A" for 0.
func formatMillis(ms int64) string {
	if ms <= 0 {
		return "N/A"
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05,000")
}
