package status

import (
	"net"
	"strconv"
	"time"

	"github.com/monagent/monagent/conf"
)

// HTTPConfig is the http section of the agent's configuration file: the
// endpoint (Server) with /metrics for Prometheus, /status for `monagent
// status`.
type HTTPConfig struct {
	// Listen is host:port; "" turns the endpoint off. The default is on
	// loopback only: expose it on purpose (0.0.0.0:9469) for a Prometheus
	// elsewhere.
	Listen string `yaml:"listen"`
	// Pprof serves Go's profiles under /debug/pprof/ on the same address
	// (off by default: a CPU profile costs the board while it runs, and a
	// profile shows the agent's internals to whoever reaches the port).
	Pprof bool `yaml:"pprof"`
	// MaxConnections is the most connections open at once (Limits
	// MaxConns): beyond it a new one replaces the connection idle longest
	// (else the one longest without its request), or waits in the
	// kernel's accept queue while every one is answering.
	MaxConnections int `yaml:"max_connections"`
	// IdleTimeout closes a keep-alive connection this long without a
	// request.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ReadTimeout bounds reading a request, its headers included.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// MaxHeaderBytes bounds a request's line and headers; beyond (and Go's
	// 4 KiB of slack), it is answered 431.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
}

// DefaultHTTPListen is where the endpoint listens unless told otherwise
// (9469: free in Prometheus's list of exporter ports at the time of writing).
const DefaultHTTPListen = "127.0.0.1:9469"

// Defaults sets every key of the section to its default.
func (h *HTTPConfig) Defaults() {
	*h = HTTPConfig{Listen: DefaultHTTPListen, MaxConnections: DefaultMaxConns, IdleTimeout: DefaultIdleTimeout,
		ReadTimeout: DefaultReadTimeout, MaxHeaderBytes: DefaultMaxHeaderBytes}
}

// Limits are the server's limits.
func (h *HTTPConfig) Limits() Limits {
	return Limits{MaxConns: h.MaxConnections, IdleTimeout: h.IdleTimeout, ReadTimeout: h.ReadTimeout, MaxHeaderBytes: h.MaxHeaderBytes}
}

// httpConnBytes is what one connection may hold besides its request's
// headers, generously: its goroutine's stack, the server's read and write
// buffers and a /metrics answer being gathered and encoded.
const httpConnBytes = 64 << 10

// maxHeaderBytes is the largest http.max_header_bytes, Go's default.
const maxHeaderBytes = 1 << 20

// MemoryBytes is what the endpoint's connections may hold at most: each its
// httpConnBytes and its headers twice (read, then parsed), Go's 4 KiB of
// slack included (a header limit beyond its range, a problem of its own,
// counts as its largest).
func (h *HTTPConfig) MemoryBytes() int64 {
	return int64(h.MaxConnections) * (httpConnBytes + 2*int64(min(h.MaxHeaderBytes, maxHeaderBytes)+4<<10))
}

// Check appends every problem of the section, under the keys http.*.
func (h *HTTPConfig) Check(p *conf.List) {
	conf.AtLeast(p, "http.max_connections", h.MaxConnections, 2, " (a scrape and `monagent status` at once)")
	conf.AtLeast(p, "http.idle_timeout", h.IdleTimeout, time.Second, "")
	conf.AtLeast(p, "http.read_timeout", h.ReadTimeout, 100*time.Millisecond, "")
	conf.Within(p, "http.max_header_bytes", h.MaxHeaderBytes, 1<<10, maxHeaderBytes, " bytes (Prometheus sends < 1 KiB)")
	if h.Listen == "" {
		return
	}
	host, port, err := net.SplitHostPort(h.Listen)
	if err != nil {
		p.Add("http.listen", "%q is not host:port (127.0.0.1:9469, :9469; \"\" turns the endpoint off)", h.Listen)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.Add("http.listen", "port %q is not a number from 0 to 65535", port)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		p.Add("http.listen", "host %q is not an IP address (or localhost)", host)
	}
}
