package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
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

// Options configure a Sender.
type Options struct {
	URLs       []string      // receivers, http:// or https://
	Queue      int           // events waiting per receiver; beyond, new ones are dropped and counted
	Timeout    time.Duration // one request
	MinBackoff time.Duration // after a failure; doubles to MaxBackoff
	MaxBackoff time.Duration
	// Attempts bounds the tries of one event (then it is dropped and
	// counted); 0 for 8.
	Attempts int
	Client   *http.Client // nil: one with Timeout
}

// CheckURL names what is wrong with a receiver's URL.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	return nil
}

// Stats are one receiver's counters.
type Stats struct {
	URL       string
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
	url                                 string
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
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout}
	}
	s := &Sender{opts: o}
	for _, u := range o.URLs {
		if err := CheckURL(u); err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
		s.rcv = append(s.rcv, &receiver{url: u, q: make(chan []byte, o.Queue)})
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
		out[i] = Stats{URL: r.url, Queued: r.queued.Load(), Delivered: r.delivered.Load(), Retries: r.retries.Load(), Dropped: r.dropped.Load()}
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
			retry, err := s.post(ctx, r.url, body)
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

func (s *Sender) post(ctx context.Context, u string, body []byte) (retry bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return true, fmt.Errorf("%s: %w", u, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return true, fmt.Errorf("%s: HTTP %d", u, c)
	default:
		return false, fmt.Errorf("%s: HTTP %d (refused, not retried)", u, c)
	}
}

// ID is an event id unique for a source: its time and a sequence number.
func ID(timeNS int64, seq uint64) string {
	return strconv.FormatInt(timeNS, 10) + "-" + strconv.FormatUint(seq, 10)
}
