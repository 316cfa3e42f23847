package remoting

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

// checkNoLeaks fails the test if, after its cleanups, goroutines running
// this package's code are left. (goleak is not a dependency of the module,
// so this is a small stand-in that looks only at our own goroutines.)
func checkNoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitTimeout)
		for {
			left := ourGoroutines()
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines leaked:\n\n%s", len(left), strings.Join(left, "\n\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// ourGoroutines returns the stacks of goroutines that run code of this
// package, other than test functions.
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "rocketstore/server/remoting.") {
			continue
		}
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "ourGoroutines") {
			continue // a test itself, or the checker
		}
		out = append(out, g)
	}
	return out
}

// logRecorder is a slog handler that keeps the records' messages.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, b.String())
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// has reports whether a logged message contains s.
func (h *logRecorder) has(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// startServer serves s on 127.0.0.1:0 and closes it at cleanup, checking
// that Serve returned ErrServerClosed.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, ErrServerClosed) {
			t.Errorf("close: %v", err)
		}
		select {
		case err := <-served:
			if !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(waitTimeout):
			t.Error("Serve did not return")
		}
	})
	return l.Addr().String()
}

func newServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := NewServer(opts)
	require.NoError(t, err)
	return s
}

func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := NewClient(opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func timeoutCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for a value from ch, failing the test after waitTimeout.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting")
		panic("unreachable")
	}
}
