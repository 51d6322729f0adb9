package influx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/monagent/monagent/sink/spool"
)

// Config configures the shipper.
type Config struct {
	URL    string
	Org    string // 2.x/3.x; ignored by 1.8
	Bucket string // "db/rp" for 1.8
	Token  string // the secret itself; never logged or put in errors

	BatchPoints   int           // send when this many points are ready (default 5000)
	BatchBytes    int           // or this many bytes (default 4 MiB)
	BatchInterval time.Duration // or this long after the first point was ready (default 1 s)
	Timeout       time.Duration // per request (default 10 s)
	MinBackoff    time.Duration // first retry delay (default 100 ms)
	MaxBackoff    time.Duration // cap on retry delay (default 1 s)
	MaxRetryAfter time.Duration // cap on a server's Retry-After (default 60 s)
	Gzip          bool
	DeadLetter    string // file rejected lines are appended to ("" = <spool>/deadletter.lp)
}

func (c *Config) defaults() {
	if c.BatchPoints <= 0 {
		c.BatchPoints = 5000
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 4 << 20
	}
	if c.BatchInterval <= 0 {
		c.BatchInterval = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Second
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Minute
	}
}

// Stats are the shipper's counters.
type Stats struct {
	Batches      uint64 // batches delivered
	Points       uint64 // points delivered
	Bytes        uint64 // line-protocol bytes delivered
	Retries      uint64 // failed attempts that were retried
	DeadLettered uint64 // lines rejected for good
	Requests     uint64
	LastError    string // the last failure (no secrets)
	LastLatency  time.Duration
}

// writer is the part of WriteAPIBlocking we use; tests substitute fakes.
type writer interface {
	WriteRecord(ctx context.Context, line ...string) error
}

// Shipper drains a spool into InfluxDB.
type Shipper struct {
	cfg    Config
	sp     *spool.Spool
	rd     *spool.Reader
	api    writer
	client influxdb2.Client

	buf     []byte // the batch being sent
	batch   spool.Batch
	deadMu  sync.Mutex
	dead    *os.File
	stopped chan struct{}

	batches, points, bytes, retries, deadLettered, requests atomic.Uint64
	lastLatency                                             atomic.Int64
	lastErr                                                 atomic.Value // string
}

// New returns a shipper for sp.
func New(cfg Config, sp *spool.Spool) (*Shipper, error) {
	cfg.defaults()
	if cfg.URL == "" || cfg.Bucket == "" {
		return nil, errors.New("influx: url and bucket are required")
	}
	opts := influxdb2.DefaultOptions().
		SetPrecision(time.Nanosecond).
		SetUseGZip(cfg.Gzip).
		SetHTTPRequestTimeout(uint(max(1, cfg.Timeout/time.Second))).
		SetLogLevel(0)
	client := influxdb2.NewClientWithOptions(cfg.URL, cfg.Token, opts)
	s := newShipper(cfg, sp, client.WriteAPIBlocking(cfg.Org, cfg.Bucket))
	s.client = client
	return s, nil
}

func newShipper(cfg Config, sp *spool.Spool, w writer) *Shipper {
	cfg.defaults()
	if cfg.DeadLetter == "" {
		cfg.DeadLetter = filepath.Join(sp.Dir(), "deadletter.lp")
	}
	s := &Shipper{cfg: cfg, sp: sp, rd: sp.NewReader(), api: w, stopped: make(chan struct{})}
	s.lastErr.Store("")
	return s
}

// Stats returns the counters.
func (s *Shipper) Stats() Stats {
	return Stats{
		Batches: s.batches.Load(), Points: s.points.Load(), Bytes: s.bytes.Load(), Retries: s.retries.Load(),
		DeadLettered: s.deadLettered.Load(), Requests: s.requests.Load(), LastError: s.lastErr.Load().(string),
		LastLatency: time.Duration(s.lastLatency.Load()),
	}
}

// Run ships until ctx is done. A batch in flight when ctx ends is not
// acknowledged: it stays in the spool and goes again after a restart.
func (s *Shipper) Run(ctx context.Context) error {
	defer close(s.stopped)
	defer s.closeFiles()
	for {
		if err := s.collect(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		dead, err := s.send(ctx, s.buf, s.batch.Points)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := s.sp.Ack(s.batch, dead); err != nil {
			return err
		}
		s.batches.Add(1)
		s.points.Add(uint64(s.batch.Points - dead))
		s.bytes.Add(uint64(len(s.buf)))
	}
}

func (s *Shipper) closeFiles() {
	s.deadMu.Lock()
	if s.dead != nil {
		s.dead.Close()
		s.dead = nil
	}
	s.deadMu.Unlock()
	s.rd.Close()
	if s.client != nil {
		s.client.Close()
	}
}

// collect waits for the first entry, then gathers more until the batch is full
// or BatchInterval has passed since the first.
func (s *Shipper) collect(ctx context.Context) error {
	e, err := s.rd.Next(ctx)
	if err != nil {
		return err
	}
	s.buf = append(s.buf[:0], e.Lines...)
	s.batch = spool.Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)}
	deadline := time.Now().Add(s.cfg.BatchInterval)
	for s.batch.Points < s.cfg.BatchPoints && len(s.buf) < s.cfg.BatchBytes {
		e, ok, err := s.rd.TryNext()
		if err != nil {
			return err
		}
		if !ok {
			wait := time.Until(deadline)
			if wait <= 0 {
				return nil
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			e, err = s.rd.Next(wctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return nil // the interval is over: send what we have
			}
		}
		s.buf = append(s.buf, e.Lines...)
		s.batch.LastSeq = e.LastSeq()
		s.batch.Points += int(e.Points)
	}
	return nil
}

// send delivers lines, retrying what may succeed later and bisecting what the
// server rejects for good. It returns how many lines were dead-lettered.
func (s *Shipper) send(ctx context.Context, lines []byte, points int) (int, error) {
	backoff := s.cfg.MinBackoff
	for {
		err := s.write(ctx, lines)
		if err == nil {
			return 0, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		s.lastErr.Store(err.Error())
		status, retryAfter := classify(err)
		if !retryable(status) {
			return s.reject(ctx, lines, points, err)
		}
		s.retries.Add(1)
		delay := backoff/2 + rand.N(backoff/2+1) // jitter over [b/2, b]
		if retryAfter > 0 {
			delay = min(retryAfter, s.cfg.MaxRetryAfter)
		}
		backoff = min(2*backoff, s.cfg.MaxBackoff)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(delay):
		}
	}
}

func (s *Shipper) write(ctx context.Context, lines []byte) error {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	start := time.Now()
	s.requests.Add(1)
	err := s.api.WriteRecord(rctx, string(lines))
	s.lastLatency.Store(int64(time.Since(start)))
	return err
}

// reject handles a permanent rejection: a single line is dead-lettered; more
// are split in two and each half sent on its own, so that only the lines the
// server refuses are set aside.
func (s *Shipper) reject(ctx context.Context, lines []byte, points int, cause error) (int, error) {
	if points <= 1 {
		if err := s.deadLetter(lines, cause); err != nil {
			return 0, err
		}
		s.deadLettered.Add(uint64(points))
		return points, nil
	}
	half := points / 2
	cut := 0
	for i := 0; i < half; i++ {
		cut += bytes.IndexByte(lines[cut:], '\n') + 1
	}
	a, err := s.send(ctx, lines[:cut], half)
	if err != nil {
		return a, err
	}
	b, err := s.send(ctx, lines[cut:], points-half)
	return a + b, err
}

func (s *Shipper) deadLetter(lines []byte, cause error) error {
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	if s.dead == nil {
		f, err := os.OpenFile(s.cfg.DeadLetter, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("influx dead-letter %s: %w", s.cfg.DeadLetter, err)
		}
		s.dead = f
	}
	msg := bytes.ReplaceAll([]byte(cause.Error()), []byte("\n"), []byte(" "))
	if _, err := fmt.Fprintf(s.dead, "# %s rejected: %s\n%s", time.Now().UTC().Format(time.RFC3339Nano), msg, lines); err != nil {
		return fmt.Errorf("influx dead-letter %s: %w", s.cfg.DeadLetter, err)
	}
	return s.dead.Sync()
}

// classify returns the HTTP status of a failed write (0 for network errors and
// timeouts) and the server's Retry-After.
func classify(err error) (int, time.Duration) {
	var he *ihttp.Error
	if errors.As(err, &he) {
		var ra time.Duration
		if he.RetryAfter > 0 {
			ra = time.Duration(he.RetryAfter) * time.Second
		}
		if he.StatusCode == 0 || he.Err != nil && isNetwork(he.Err) {
			return 0, ra
		}
		return he.StatusCode, ra
	}
	return 0, 0
}

func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// retryable: network errors and timeouts (0), 408, 429 and every 5xx.
func retryable(status int) bool {
	return status == 0 || status == 408 || status == 429 || status >= 500
}
