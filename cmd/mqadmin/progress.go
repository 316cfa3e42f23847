package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal (the TCGETS ioctl succeeds,
// as golang.org/x/term's IsTerminal checks it).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminalWidth is w's width in columns, 80 if it cannot tell.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 80
}

// progressBar draws "verb [=====>    ] done/total rate" on one terminal
// line, redrawn at most every 100 ms, and a last time at Done. A nil bar
// (not a terminal, or nothing worth a bar) draws nothing.
type progressBar struct {
	w     io.Writer
	verb  string
	total int
	done  int
	start time.Time
	drawn time.Time
	width int
}

// newProgressBar returns a bar on w for total items, or nil when e has no
// terminal or total is one message or less.
func newProgressBar(e *env, verb string, total int) *progressBar {
	if !e.progress || total <= 1 {
		return nil
	}
	return &progressBar{w: e.stderr, verb: verb, total: total, start: time.Now(), width: terminalWidth(e.stderr)}
}

// Add counts n more items done.
func (p *progressBar) Add(n int) {
	if p == nil {
		return
	}
	p.done += n
	if now := time.Now(); now.Sub(p.drawn) >= 100*time.Millisecond || p.done >= p.total {
		p.drawn = now
		p.draw()
	}
}

// Done draws the final state and ends the line.
func (p *progressBar) Done() {
	if p == nil {
		return
	}
	p.draw()
	fmt.Fprintln(p.w)
}

func (p *progressBar) draw() {
	rate := float64(p.done) / max(time.Since(p.start).Seconds(), 1e-3)
	tail := fmt.Sprintf(" %d/%d %.0f msg/s", p.done, p.total, rate)
	barLen := max(p.width-len(p.verb)-len(tail)-4, 10)
	filled := barLen * min(p.done, p.total) / p.total
	bar := strings.Repeat("=", filled)
	if filled < barLen {
		bar += ">" + strings.Repeat(" ", barLen-filled-1)
	}
	fmt.Fprintf(p.w, "\r%s [%s]%s", p.verb, bar, tail)
}
