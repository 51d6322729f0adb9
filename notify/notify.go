package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one CloudEvent (the attributes monagent sets; data is JSON).
type Event struct {
	ID      string `json:"id"`
	Source  string `json:"source"` // e.g. monagent://boarda
	Type    string `json:"type"`   // e.g. io.monagent.sync-state.v1
	Subject string `json:"subject,omitempty"`
	// Time is the event's time (RFC 3339 with ns), not its sending's.
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`
}

// MarshalJSON writes the structured-mode form: specversion and
// datacontenttype with the attributes.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		SpecVersion     string `json:"specversion"`
		DataContentType string `json:"datacontenttype"`
		plain
	}{"1.0", "application/json", plain(e)})
}

// Receiver is one webhook. Its URL may hold a secret (Slack- and
// Teams-style URLs carry one in the path, others in the query), and Header a
// token: neither is ever shown. A receiver is named by its index and host
// alone (Name, Stats), in every error too.
type Receiver struct {
	URL    string      // http:// or https://, without user info (CheckURL)
	Header http.Header // sent with every request (a token); nil for none
}

// Options configure a Sender.
type Options struct {
	Receivers  []Receiver
	Queue      int           // events waiting per receiver; beyond, new ones are dropped and counted
	Timeout    time.Duration // one request
	MinBackoff time.Duration // after a failure; doubles to MaxBackoff
	MaxBackoff time.Duration
	// Attempts bounds the tries of one event (then it is dropped and
	// counted); 0 for 8.
	Attempts int
	// Client sends the requests; nil: one with Timeout. Redirects are never
	// followed, whatever its CheckRedirect: a 3xx is a failed delivery (the
	// event, and any token, would go to a host nobody configured).
	Client *http.Client
	// Observe, when set, is told the outcome of every attempt to deliver an
	// event to receiver i (err nil: delivered), on that receiver's
	// goroutine: the agent logs what changes. err names the receiver by
	// index and host only.
	Observe func(i int, err error)
}

// ErrCredentials is CheckURL's answer to a URL with user info
// (user:password@).
var ErrCredentials = errors.New("holds credentials (user:password@)")

// CheckURL names what is wrong with a receiver's URL without repeating the
// URL (its path and query may be a secret): at most its host.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL
		}
		return fmt.Errorf("not an http:// or https:// URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("not an http:// or https:// URL (scheme %q)", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errors.New("not an http:// or https:// URL (no host)")
	case u.User != nil:
		return fmt.Errorf("the URL for %s %w", Host(u), ErrCredentials)
	}
	return nil
}

// Host is u's host and port, the port defaulted from the scheme
// (hooks.example:443): how a receiver is named.
func Host(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// Name is how receiver i of host is named in errors and logs: "webhook 0
// (hooks.example:443)".
func Name(i int, host string) string { return "webhook " + strconv.Itoa(i) + " (" + host + ")" }

// Stats are one receiver's counters, named by index and host.
type Stats struct {
	Receiver  int    // its index in Options.Receivers
	Host      string // host:port (Host)
	Queued    uint64 // accepted into the queue
	Delivered uint64 // answered 2xx
	Retries   uint64 // failed attempts that were tried again
	Dropped   uint64 // queue full, attempts used up, or left at Close
	LastError string
}

// Sender delivers events to every receiver.
type Sender struct {
	opts Options
	rcv  []*receiver
	wg   sync.WaitGroup
	stop context.CancelFunc
	ctx  context.Context
}

type receiver struct {
	index                               int
	url                                 string
	host                                string
	header                              http.Header
	scrub                               *strings.Replacer // the URL's secrets out of an error's text
	q                                   chan []byte
	queued, delivered, retries, dropped atomic.Uint64
	lastErr                             atomic.Pointer[string]
}

// New checks the options and starts nothing: Run starts the senders.
func New(o Options) (*Sender, error) {
	if o.Queue <= 0 {
		return nil, fmt.Errorf("notify: queue must be positive, got %d", o.Queue)
	}
	if o.Timeout <= 0 || o.MinBackoff <= 0 || o.MaxBackoff < o.MinBackoff {
		return nil, fmt.Errorf("notify: timeout and backoffs must be positive, the maximum at least the minimum")
	}
	if o.Attempts == 0 {
		o.Attempts = 8
	}
	c := &http.Client{Timeout: o.Timeout}
	if o.Client != nil {
		c = new(http.Client)
		*c = *o.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.Client = c
	s := &Sender{opts: o}
	for i, r := range o.Receivers {
		if err := CheckURL(r.URL); err != nil {
			return nil, fmt.Errorf("notify: webhook %d: %w", i, err)
		}
		u, _ := url.Parse(r.URL)
		s.rcv = append(s.rcv, &receiver{index: i, url: r.URL, host: Host(u), header: r.Header.Clone(), scrub: scrubber(r.URL, u),
			q: make(chan []byte, o.Queue)})
	}
	return s, nil
}

// Run starts one sender per receiver; they stop when ctx ends or at Close.
func (s *Sender) Run(ctx context.Context) {
	s.ctx, s.stop = context.WithCancel(ctx)
	for _, r := range s.rcv {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.send(s.ctx, r)
		}()
	}
}

// Send queues e for every receiver and returns at once: a full queue drops
// e for that receiver, counted.
func (s *Sender) Send(e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	for _, r := range s.rcv {
		select {
		case r.q <- body:
			r.queued.Add(1)
		default:
			r.dropped.Add(1)
		}
	}
	return nil
}

// Close stops the senders, giving the queues up to grace to empty; what is
// left is dropped, counted.
func (s *Sender) Close(grace time.Duration) {
	if s.stop == nil {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && s.waiting() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	s.stop()
	s.wg.Wait()
	for _, r := range s.rcv {
		for {
			select {
			case <-r.q:
				r.dropped.Add(1)
				continue
			default:
			}
			break
		}
	}
}

func (s *Sender) waiting() int {
	n := 0
	for _, r := range s.rcv {
		n += len(r.q)
	}
	return n
}

// Stats are every receiver's counters.
func (s *Sender) Stats() []Stats {
	out := make([]Stats, len(s.rcv))
	for i, r := range s.rcv {
		out[i] = Stats{Receiver: r.index, Host: r.host, Queued: r.queued.Load(), Delivered: r.delivered.Load(), Retries: r.retries.Load(), Dropped: r.dropped.Load()}
		if e := r.lastErr.Load(); e != nil {
			out[i].LastError = *e
		}
	}
	return out
}

// send delivers r's queue in order: an event is tried until a 2xx, its
// attempts are used up, or ctx ends; a 4xx other than 408 and 429 is not
// tried again (the receiver refuses it).
func (s *Sender) send(ctx context.Context, r *receiver) {
	for {
		var body []byte
		select {
		case <-ctx.Done():
			return
		case body = <-r.q:
		}
		backoff := s.opts.MinBackoff
		for attempt := 1; ; attempt++ {
			retry, err := s.post(ctx, r, body)
			if s.opts.Observe != nil {
				s.opts.Observe(r.index, err)
			}
			if err == nil {
				r.delivered.Add(1)
				break
			}
			msg := err.Error()
			r.lastErr.Store(&msg)
			if !retry || attempt >= s.opts.Attempts || ctx.Err() != nil {
				r.dropped.Add(1)
				break
			}
			r.retries.Add(1)
			select {
			case <-ctx.Done():
				r.dropped.Add(1)
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, s.opts.MaxBackoff)
		}
	}
}

// post tries body once. Its error names the receiver by index and host and
// holds nothing of the URL's path, query or user info, nor of its headers.
func (s *Sender) post(ctx context.Context, r *receiver, body []byte) (retry bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return false, r.fail(err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return true, r.fail(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c >= 300 && c < 400:
		// Not followed: the event (and its token) would go where nobody
		// configured, and a receiver redirecting to itself would cost a
		// request per hop. Not retried: it would answer the same.
		to := ""
		if loc, err := resp.Location(); err == nil && loc.Host != "" {
			to = " to " + Host(loc)
		}
		return false, r.fail(fmt.Errorf("HTTP %d: a redirect%s, not followed (not retried; give the webhook's final URL)", c, to))
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return true, r.fail(fmt.Errorf("HTTP %d", c))
	default:
		return false, r.fail(fmt.Errorf("HTTP %d (refused, not retried)", c))
	}
}

// fail is err naming r, without the URL (*url.Error repeats it whole) or any
// of its secrets.
func (r *receiver) fail(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	err = fmt.Errorf("%s: %w", Name(r.index, r.host), err)
	if msg := err.Error(); r.scrub.Replace(msg) != msg {
		return errors.New(r.scrub.Replace(msg))
	}
	return err
}

// scrubber takes the secrets of raw, parsed as u, out of a text: the URL
// itself, its path (but "/"), query and fragment, as written and unescaped.
func scrubber(raw string, u *url.URL) *strings.Replacer {
	var pairs []string
	add := func(secret string) {
		if len(secret) >= 6 { // shorter would garble the text (and is hardly a secret)
			pairs = append(pairs, secret, "…")
		}
	}
	add(raw)
	add(u.String())
	for _, part := range []string{u.EscapedPath(), u.Path, u.RawQuery, u.Fragment, u.EscapedFragment()} {
		add(part)
	}
	if q, err := url.QueryUnescape(u.RawQuery); err == nil {
		add(q)
	}
	return strings.NewReplacer(pairs...)
}

// ID is an event id unique for a source: its time and a sequence number.
func ID(timeNS int64, seq uint64) string {
	return strconv.FormatInt(timeNS, 10) + "-" + strconv.FormatUint(seq, 10)
}
