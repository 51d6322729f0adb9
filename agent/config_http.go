package agent

import (
	"net"
	"strconv"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/notify"
	"github.com/monagent/monagent/status"
)

// HTTPConfig is the agent's HTTP endpoint (status.Server): /metrics for
// Prometheus, /status for `monagent status`.
type HTTPConfig struct {
	// Listen is host:port; "" turns the endpoint off. The default is on
	// loopback only: expose it on purpose (0.0.0.0:9469) for a Prometheus
	// elsewhere.
	Listen string `yaml:"listen"`
	// Pprof serves Go's profiles under /debug/pprof/ on the same address
	// (off by default: a CPU profile costs the board while it runs, and a
	// profile shows the agent's internals to whoever reaches the port).
	Pprof bool `yaml:"pprof"`
	// MaxConnections is the most connections open at once (status.Limits
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

func (h *HTTPConfig) defaults() {
	*h = HTTPConfig{Listen: DefaultHTTPListen, MaxConnections: status.DefaultMaxConns, IdleTimeout: status.DefaultIdleTimeout,
		ReadTimeout: status.DefaultReadTimeout, MaxHeaderBytes: status.DefaultMaxHeaderBytes}
}

// limits are the server's limits.
func (h *HTTPConfig) limits() status.Limits {
	return status.Limits{MaxConns: h.MaxConnections, IdleTimeout: h.IdleTimeout, ReadTimeout: h.ReadTimeout, MaxHeaderBytes: h.MaxHeaderBytes}
}

// httpConnBytes is what one connection may hold besides its request's
// headers, generously: its goroutine's stack, the server's read and write
// buffers and a /metrics answer being gathered and encoded.
const httpConnBytes = 64 << 10

// maxHeaderBytes is the largest http.max_header_bytes, Go's default.
const maxHeaderBytes = 1 << 20

// memoryBytes is what the endpoint's connections may hold at most: each its
// httpConnBytes and its headers twice (read, then parsed), Go's 4 KiB of
// slack included (a header limit beyond its range, a problem of its own,
// counts as its largest).
func (h *HTTPConfig) memoryBytes() int64 {
	return int64(h.MaxConnections) * (httpConnBytes + 2*int64(min(h.MaxHeaderBytes, maxHeaderBytes)+4<<10))
}

func (h *HTTPConfig) check(p *problems) {
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

// NotifyConfig sends every clock state change to webhooks as a CloudEvent
// (notify.Sender): each receiver has its own queue, so a slow one delays no
// other and no source.
type NotifyConfig struct {
	Webhooks   []string      `yaml:"webhooks"`    // http:// or https:// URLs; none turns it off
	Queue      int           `yaml:"queue"`       // events waiting per receiver; beyond, dropped and counted
	Timeout    time.Duration `yaml:"timeout"`     // one request
	MaxBackoff time.Duration `yaml:"max_backoff"` // retries back off from 100 ms up to this
}

func (n *NotifyConfig) defaults() {
	*n = NotifyConfig{Queue: 256, Timeout: 5 * time.Second, MaxBackoff: 30 * time.Second}
}

func (n *NotifyConfig) check(p *problems) {
	for i, u := range n.Webhooks {
		if err := notify.CheckURL(u); err != nil {
			p.Add("notify.webhooks["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
	conf.AtLeast(p, "notify.queue", n.Queue, 1, "")
	p.Positive("notify.timeout", n.Timeout)
	conf.AtLeast(p, "notify.max_backoff", n.MaxBackoff, 100*time.Millisecond, "")
}

// sender is the notifications' sender, nil without webhooks.
func (n *NotifyConfig) sender() (*notify.Sender, error) {
	if len(n.Webhooks) == 0 {
		return nil, nil
	}
	return notify.New(notify.Options{URLs: n.Webhooks, Queue: n.Queue, Timeout: n.Timeout, MinBackoff: 100 * time.Millisecond, MaxBackoff: n.MaxBackoff})
}

var (
	httpSection   = section{key: "http", of: func(c *Config) sectionConfig { return &c.HTTP }}
	notifySection = section{key: "notify", of: func(c *Config) sectionConfig { return &c.Notify }}
)
