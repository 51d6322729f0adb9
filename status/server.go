package status

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics (the Prometheus text format, OpenMetrics when
// asked) and /status (Doc as JSON).
type Server struct {
	ln  *limitListener
	srv *http.Server
	mux *http.ServeMux
}

// Limits bound what clients can hold of the server: a local client that
// opens thousands of connections or sends megabytes of headers costs at
// most MaxConns connections of at most MaxHeaderBytes each, and scrapes go
// on meanwhile.
type Limits struct {
	// MaxConns is the most connections open at once. Beyond it, a new
	// connection replaces the one waiting longest without a request in
	// progress (idle longest, else the longest without a request); when
	// every one is serving a request, new connections wait in the kernel's
	// accept queue until one ends.
	MaxConns int
	// IdleTimeout closes a keep-alive connection this long without a
	// request.
	IdleTimeout time.Duration
	// ReadTimeout bounds reading a request, its headers included, from its
	// first byte (or from the connection's start).
	ReadTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers (Go's server lets
	// 4 KiB more through); a larger request is answered 431 and its
	// connection closed.
	MaxHeaderBytes int
}

// Defaults of Limits: Prometheus opens one connection per scrape target,
// sends its request at once with < 1 KiB of headers and scrapes every 15 s
// to 1 min.
const (
	DefaultMaxConns       = 32
	DefaultIdleTimeout    = 30 * time.Second
	DefaultReadTimeout    = 5 * time.Second
	DefaultMaxHeaderBytes = 4 << 10
)

// DefaultLimits are the limits of an agent not told otherwise.
func DefaultLimits() Limits {
	return Limits{MaxConns: DefaultMaxConns, IdleTimeout: DefaultIdleTimeout, ReadTimeout: DefaultReadTimeout, MaxHeaderBytes: DefaultMaxHeaderBytes}
}

// writeTimeout bounds writing an answer: a CPU profile takes at most 25 s.
const writeTimeout = 30 * time.Second

// Listen binds addr (host:port) and prepares the handlers: reg is gathered
// at every scrape, doc makes the /status document; lim bounds the clients
// (a zero field takes its default). A malformed or busy address is one
// error naming it.
func Listen(addr string, reg prometheus.Gatherer, doc func() Doc, lim Limits) (*Server, error) {
	d := DefaultLimits()
	lim.MaxConns = cmp.Or(lim.MaxConns, d.MaxConns)
	lim.IdleTimeout = cmp.Or(lim.IdleTimeout, d.IdleTimeout)
	lim.ReadTimeout = cmp.Or(lim.ReadTimeout, d.ReadTimeout)
	lim.MaxHeaderBytes = cmp.Or(lim.MaxHeaderBytes, d.MaxHeaderBytes)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(doc())
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "monagent: /metrics (Prometheus), /status (JSON)")
	})
	ll := newLimitListener(ln, lim.MaxConns)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: lim.ReadTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         ll.track,
	}
	return &Server{ln: ll, mux: mux, srv: srv}, nil
}

// Profiles adds Go's profiles under /debug/pprof/ (net/http/pprof's
// handlers: CPU for ?seconds=N, at most 25 s within the write timeout;
// heap, allocs, goroutine, mutex, block; the execution trace): where the
// agent's CPU and memory go on a board, read with `go tool pprof` and the
// binary. Call it before Serve.
func (s *Server) Profiles() {
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve answers until ctx ends, then closes the listener and every
// connection, waiting at most a second for requests in flight.
func (s *Server) Serve(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("http serve %s: %w", s.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close closes a server that was never served.
func (s *Server) Close() error { return s.ln.Close() }
