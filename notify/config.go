package notify

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
)

// Config is the notify section of the agent's configuration file: every
// clock state change goes to webhooks as a CloudEvent (Sender): each
// receiver has its own queue, so a slow one delays no other and no source.
type Config struct {
	Webhooks   []Webhook     `yaml:"webhooks"`    // none turns it off
	Queue      int           `yaml:"queue"`       // events waiting per receiver; beyond, dropped and counted
	Timeout    time.Duration `yaml:"timeout"`     // one request
	MaxBackoff time.Duration `yaml:"max_backoff"` // retries back off from 100 ms up to this
}

// Webhook is one receiver, written as its URL alone or as a mapping with a
// token sent in a header. The URL may hold a secret (Slack-style webhooks
// keep theirs in the path, others in the query): the agent names a receiver
// by its index and host only, in records, metrics, logs and errors. User
// info (user:password@) is refused: a token goes in a header whose value
// comes from a file or an environment variable, never from the
// configuration file.
type Webhook struct {
	URL string `yaml:"url"` // http:// or https://
	// Header is the header that carries the token (default Authorization:
	// the file then holds "Bearer <token>" or "Basic <base64>").
	Header    string `yaml:"header"`
	TokenFile string `yaml:"token_file"` // the header's value, read at start (surrounding white space trimmed)
	TokenEnv  string `yaml:"token_env"`  // or the environment variable that holds it
}

// ShortForm lets an entry be written as its URL alone (conf.StringOrEntry).
func (Webhook) ShortForm() {}

// UnmarshalYAML decodes a webhooks entry: a URL, or a mapping.
func (w *Webhook) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*w = Webhook{URL: n.Value}
		return nil
	}
	return conf.DecodeOver(n, w, Webhook{})
}

// Defaults sets every key of the section to its default.
func (n *Config) Defaults() {
	*n = Config{Queue: 256, Timeout: 5 * time.Second, MaxBackoff: 30 * time.Second}
}

// Check appends every problem of the section, under the keys notify.*.
func (n *Config) Check(p *conf.List) {
	for i, w := range n.Webhooks {
		w.check(webhookKey(i), p)
	}
	conf.AtLeast(p, "notify.queue", n.Queue, 1, "")
	p.Positive("notify.timeout", n.Timeout)
	conf.AtLeast(p, "notify.max_backoff", n.MaxBackoff, 100*time.Millisecond, "")
}

// webhookKey is the key of the i-th webhook.
func webhookKey(i int) string { return "notify.webhooks[" + strconv.Itoa(i) + "]" }

// check names what is wrong with the entry at key, never repeating its URL
// (at most its host).
func (w *Webhook) check(key string, p *conf.List) {
	long := w.Header != "" || w.TokenFile != "" || w.TokenEnv != ""
	urlKey := key
	if long {
		urlKey = key + ".url"
	}
	switch err := CheckURL(w.URL); {
	case w.URL == "":
		p.Add(urlKey, "no URL")
	case errors.Is(err, ErrCredentials):
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

// Board checks that each webhook's token can be read: a webhook sent
// without its token would be refused every time.
func (n *Config) Board(p *conf.List) {
	for i, w := range n.Webhooks {
		_, err := w.header(webhookKey(i))
		p.AddErr(err)
	}
}

// header is the header the entry at key sends, nil for none; a
// *conf.KeyError when its token cannot be read or is empty. The token is
// never in the error.
func (w *Webhook) header(key string) (http.Header, error) {
	if w.TokenFile == "" && w.TokenEnv == "" {
		return nil, nil
	}
	tok, err := conf.ReadToken(w.TokenFile, w.TokenEnv)
	switch {
	case err != nil:
		return nil, &conf.KeyError{Key: key + ".token_file", Reason: conf.PathReason(err), Err: err}
	case tok == "" && w.TokenFile != "":
		return nil, conf.KeyErr(key+".token_file", "%s is empty", w.TokenFile)
	case tok == "":
		return nil, conf.KeyErr(key+".token_env", "$%s is empty or unset", w.TokenEnv)
	case strings.ContainsFunc(tok, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }):
		k := key + ".token_file"
		if w.TokenFile == "" {
			k = key + ".token_env"
		}
		return nil, conf.KeyErr(k, "the token holds a line break or another control character, which no header can carry")
	}
	return http.Header{http.CanonicalHeaderKey(cmp.Or(w.Header, "Authorization")): {tok}}, nil
}

// Sender is the notifications' sender, nil without webhooks; observe is
// told every attempt's outcome (Options.Observe).
func (n *Config) Sender(observe func(int, error)) (*Sender, error) {
	if len(n.Webhooks) == 0 {
		return nil, nil
	}
	rs := make([]Receiver, len(n.Webhooks))
	for i, w := range n.Webhooks {
		h, err := w.header(webhookKey(i))
		if err != nil {
			return nil, err
		}
		rs[i] = Receiver{URL: w.URL, Header: h}
	}
	return New(Options{Receivers: rs, Queue: n.Queue, Timeout: n.Timeout, MinBackoff: 100 * time.Millisecond,
		MaxBackoff: n.MaxBackoff, Observe: observe})
}
