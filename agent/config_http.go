package agent

import (
	"cmp"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/notify"
	"github.com/monagent/monagent/sink/influx"
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
	Webhooks   []WebhookConfig `yaml:"webhooks"`    // none turns it off
	Queue      int             `yaml:"queue"`       // events waiting per receiver; beyond, dropped and counted
	Timeout    time.Duration   `yaml:"timeout"`     // one request
	MaxBackoff time.Duration   `yaml:"max_backoff"` // retries back off from 100 ms up to this
}

// WebhookConfig is one receiver, written as its URL alone or as a mapping
// with a token sent in a header. The URL may hold a secret (Slack-style
// webhooks keep theirs in the path, others in the query): the agent names a
// receiver by its index and host only, in records, metrics, logs and
// errors. User info (user:password@) is refused: a token goes in a header
// whose value comes from a file or an environment variable, never from this
// file.
type WebhookConfig struct {
	URL string `yaml:"url"` // http:// or https://
	// Header is the header that carries the token (default Authorization:
	// the file then holds "Bearer <token>" or "Basic <base64>").
	Header    string `yaml:"header"`
	TokenFile string `yaml:"token_file"` // the header's value, read at start (surrounding white space trimmed)
	TokenEnv  string `yaml:"token_env"`  // or the environment variable that holds it
}

// ShortForm lets an entry be written as its URL alone (conf.StringOrEntry).
func (WebhookConfig) ShortForm() {}

// UnmarshalYAML decodes a webhooks entry: a URL, or a mapping.
func (w *WebhookConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*w = WebhookConfig{URL: n.Value}
		return nil
	}
	return conf.DecodeOver(n, w, WebhookConfig{})
}

func (n *NotifyConfig) defaults() {
	*n = NotifyConfig{Queue: 256, Timeout: 5 * time.Second, MaxBackoff: 30 * time.Second}
}

func (n *NotifyConfig) check(p *problems) {
	for i, w := range n.Webhooks {
		w.check("notify.webhooks["+strconv.Itoa(i)+"]", p)
	}
	conf.AtLeast(p, "notify.queue", n.Queue, 1, "")
	p.Positive("notify.timeout", n.Timeout)
	conf.AtLeast(p, "notify.max_backoff", n.MaxBackoff, 100*time.Millisecond, "")
}

// check names what is wrong with the entry at key, never repeating its URL
// (at most its host).
func (w *WebhookConfig) check(key string, p *problems) {
	long := w.Header != "" || w.TokenFile != "" || w.TokenEnv != ""
	urlKey := key
	if long {
		urlKey = key + ".url"
	}
	switch err := notify.CheckURL(w.URL); {
	case w.URL == "":
		p.Add(urlKey, "no URL")
	case errors.Is(err, notify.ErrCredentials):
		p.Add(urlKey, "%v: send them in a header instead, writing the entry as {url: <the URL without them>, "+
			"token_file: <a file holding \"Basic <base64 of user:password>\">} or token_env: <a variable holding it> (docs/configuration.md, notify.webhooks)", err)
	case err != nil:
		p.Add(urlKey, "%v", err)
	}
	switch {
	case w.TokenFile != "" && w.TokenEnv != "":
		p.Add(key+".token_env", "give token_file or token_env, not both")
	case w.Header != "" && w.TokenFile == "" && w.TokenEnv == "":
		p.Add(key+".header", "sends nothing without token_file or token_env")
	}
	if h := w.Header; h != "" && !headerName(h) {
		p.Add(key+".header", "%q is not a header name", h)
	} else if reservedHeader[http.CanonicalHeaderKey(h)] {
		p.Add(key+".header", "%s is set by the agent or the HTTP client, not a place for a token", http.CanonicalHeaderKey(h))
	}
}

// headerName reports whether h is a header name: a token (RFC 9110 5.1).
func headerName(h string) bool {
	return !strings.ContainsFunc(h, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
	})
}

// reservedHeader are headers a token must not replace.
var reservedHeader = map[string]bool{"Content-Type": true, "Content-Length": true, "Host": true, "Transfer-Encoding": true, "Connection": true}

// board checks that each webhook's token can be read: a webhook sent
// without its token would be refused every time.
func (n *NotifyConfig) board(_ PathsConfig, p *problems) {
	for i, w := range n.Webhooks {
		_, err := w.header("notify.webhooks[" + strconv.Itoa(i) + "]")
		p.AddErr(err)
	}
}

// header is the header the entry at key sends, nil for none; a *KeyError
// when its token cannot be read or is empty. The token is never in the error.
func (w *WebhookConfig) header(key string) (http.Header, error) {
	if w.TokenFile == "" && w.TokenEnv == "" {
		return nil, nil
	}
	tok, err := influx.ReadToken(w.TokenFile, w.TokenEnv)
	switch {
	case err != nil:
		return nil, &KeyError{Key: key + ".token_file", Reason: influx.PathReason(err), Err: err}
	case tok == "" && w.TokenFile != "":
		return nil, keyErr(key+".token_file", "%s is empty", w.TokenFile)
	case tok == "":
		return nil, keyErr(key+".token_env", "$%s is empty or unset", w.TokenEnv)
	case strings.ContainsFunc(tok, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }):
		k := key + ".token_file"
		if w.TokenFile == "" {
			k = key + ".token_env"
		}
		return nil, keyErr(k, "the token holds a line break or another control character, which no header can carry")
	}
	return http.Header{http.CanonicalHeaderKey(cmp.Or(w.Header, "Authorization")): {tok}}, nil
}

// sender is the notifications' sender, nil without webhooks; observe is
// told every attempt's outcome (notify.Options.Observe).
func (n *NotifyConfig) sender(observe func(int, error)) (*notify.Sender, error) {
	if len(n.Webhooks) == 0 {
		return nil, nil
	}
	rs := make([]notify.Receiver, len(n.Webhooks))
	for i, w := range n.Webhooks {
		h, err := w.header("notify.webhooks[" + strconv.Itoa(i) + "]")
		if err != nil {
			return nil, err
		}
		rs[i] = notify.Receiver{URL: w.URL, Header: h}
	}
	return notify.New(notify.Options{Receivers: rs, Queue: n.Queue, Timeout: n.Timeout, MinBackoff: 100 * time.Millisecond,
		MaxBackoff: n.MaxBackoff, Observe: observe})
}

var (
	httpSection   = section{key: "http", of: func(c *Config) sectionConfig { return &c.HTTP }}
	notifySection = section{key: "notify", of: func(c *Config) sectionConfig { return &c.Notify }, fatal: true}
)
