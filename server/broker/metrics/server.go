package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure a Server.
type Options struct {
	// Addr is the host:port to listen on; port 0 picks a free one.
	Addr string
	// Labels are put on every broker metric: RocketMQ's cluster,
	// node_type and node_id, and any of metricsLabel.
	Labels map[string]string
	// Source gives the broker's figures; nil serves only the runtime's.
	Source Source
	// Health says whether the broker can serve: nil for ready, or why not.
	// nil means always ready.
	Health func() error
	// Logger receives the server's errors; nil discards.
	Logger *slog.Logger
	// QueueSeriesLimit bounds the per-queue series of a scrape
	// (rocketstore_consumer_queue_lag_messages) and the group and topic
	// pairs of the lag series (rocketmq_consumer_lag_*): with more, those
	// with the largest lag are kept, and how many were left out is
	// reported. 0: DefaultQueueSeriesLimit; negative: no limit.
	QueueSeriesLimit int
	// Mount are more handlers on the same port, by ServeMux pattern (the
	// web console: "/console/").
	Mount map[string]http.Handler
}

// DefaultQueueSeriesLimit is QueueSeriesLimit's default: a scrape stays
// small and quick however many queues the broker has.
const DefaultQueueSeriesLimit = 1000

// Server is the HTTP server of /metrics, /healthz and /debug/pprof/.
type Server struct {
	ln   net.Listener
	http *http.Server
	done chan struct{}
}

// Start listens on opts.Addr and serves until Shutdown.
func Start(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	if opts.Source != nil {
		if err := prometheus.WrapRegistererWith(maps.Clone(opts.Labels), reg).Register(NewCollector(opts.Source, opts.QueueSeriesLimit)); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	if err := errors.Join(reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s (metricsPromExporterHost, metricsPromExporterPort): %w", opts.Addr, err)
	}
	s := &Server{ln: ln, done: make(chan struct{})}
	h := NewHandler(reg, opts.Health, opts.Logger)
	if len(opts.Mount) > 0 {
		mux := http.NewServeMux()
		mux.Handle("/", h)
		for pattern, mh := range opts.Mount {
			mux.Handle(pattern, mh)
		}
		h = mux
	}
	s.http = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("the metrics server stopped", "addr", ln.Addr(), "err", err)
		}
	}()
	return s, nil
}

// NewHandler serves /metrics from g, /healthz from health (nil: always
// ready) and /debug/pprof/, on a mux of its own.
func NewHandler(g prometheus.Gatherer, health func() error, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if health != nil {
			if err := health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "rocketstore broker\n/metrics       Prometheus metrics\n/healthz       ready or not, with why\n/debug/pprof/  Go profiles\n")
	})
	return mux
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops listening and waits for the requests in flight, bounded
// by ctx (then closes their connections).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.http.Close())
	}
	<-s.done
	return err
}
