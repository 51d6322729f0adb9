package influx

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
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

	// Logger gets one line per change of the shipper's state (the server's
	// answer, or a local spool or dead-letter failure); nil logs nothing.
	Logger *slog.Logger
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

// Server states, as Stats.State reports them.
const (
	StateOK           = "ok"
	StateUnreachable  = "unreachable"  // network error or timeout
	StateTLS          = "tls"          // TLS handshake or certificate failure
	StateUnauthorized = "unauthorized" // 401
	StateForbidden    = "forbidden"    // 403
	StateNotFound     = "not_found"    // 404: database or bucket missing
	StateTooLarge     = "too_large"    // 413 for a single line
	StateThrottled    = "throttled"    // 429
	StateServerError  = "server_error" // 408, 5xx
	StateBadAnswer    = "bad_answer"   // a 400/422 whose body is unreadable or not a known rejection; any other status
)

// Stats are the shipper's counters and state.
type Stats struct {
	Batches      uint64 // batches delivered
	Points       uint64 // points delivered
	Bytes        uint64 // line-protocol bytes delivered
	Retries      uint64 // failed attempts that were retried
	DeadLettered uint64 // lines rejected for good
	Requests     uint64
	Splits       uint64 // batches halved after a 413
	LastError    string // the last failure (no secrets)
	LastLatency  time.Duration

	State               string // StateOK or why writes fail now
	LastStatus          int    // HTTP status of the last answer (0: none, network error)
	OutageStartNS       int64  // REALTIME ns of the first failure of the current outage; 0 when State is ok
	ConsecutiveFailures uint64 // failed attempts since the last success

	LocalState       string // "ok", or the local step failing now: "spool_read", "spool_ack", "dead_letter"
	ReaderErrors     uint64
	AckErrors        uint64
	DeadLetterErrors uint64
}

// writer is the part of WriteAPIBlocking we use; tests substitute fakes.
type writer interface {
	WriteRecord(ctx context.Context, line ...string) error
}

// entryReader is the part of *spool.Reader the shipper uses.
type entryReader interface {
	Next(ctx context.Context) (spool.Entry, error)
	TryNext() (spool.Entry, bool, error)
	Close() error
}

// queue is the part of *spool.Spool the shipper uses; tests inject failures.
type queue interface {
	reader() entryReader
	Ack(b spool.Batch, deadLettered int) error
	Stats() spool.Stats
	Dir() string
}

type spoolQueue struct{ *spool.Spool }

func (q spoolQueue) reader() entryReader { return q.NewReader() }

// Shipper drains a spool into InfluxDB.
type Shipper struct {
	cfg    Config
	log    *slog.Logger
	q      queue
	rd     entryReader
	api    writer
	client influxdb2.Client

	buf   []byte // the batch being sent
	batch spool.Batch
	dead  []byte // lines of the current batch rejected for good, with their causes
	nDead int

	batches, points, bytes, retries, deadLettered, requests, splits atomic.Uint64
	readerErrors, ackErrors, deadErrors                             atomic.Uint64
	lastLatency                                                     atomic.Int64
	lastErr                                                         atomic.Value // string

	mu         sync.Mutex // guards the state below, read by Stats
	state      string
	lastStatus int
	outage     time.Time
	failures   uint64
	local      string
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
	s := newShipper(cfg, spoolQueue{sp}, client.WriteAPIBlocking(cfg.Org, cfg.Bucket))
	s.client = client
	return s, nil
}

func newShipper(cfg Config, q queue, w writer) *Shipper {
	cfg.defaults()
	if cfg.DeadLetter == "" {
		cfg.DeadLetter = filepath.Join(q.Dir(), "deadletter.lp")
	}
	s := &Shipper{cfg: cfg, log: cfg.Logger, q: q, api: w, state: StateOK, local: "ok"}
	s.lastErr.Store("")
	return s
}

// SetLogger sets the logger of state changes (nil: silent). Call it before Run.
func (s *Shipper) SetLogger(l *slog.Logger) { s.log = l }

// DeadLetterPath is the file rejected lines go to.
func (s *Shipper) DeadLetterPath() string { return s.cfg.DeadLetter }

// Stats returns the counters and state.
func (s *Shipper) Stats() Stats {
	st := Stats{
		Batches: s.batches.Load(), Points: s.points.Load(), Bytes: s.bytes.Load(), Retries: s.retries.Load(),
		DeadLettered: s.deadLettered.Load(), Requests: s.requests.Load(), Splits: s.splits.Load(),
		LastError: s.lastErr.Load().(string), LastLatency: time.Duration(s.lastLatency.Load()),
		ReaderErrors: s.readerErrors.Load(), AckErrors: s.ackErrors.Load(), DeadLetterErrors: s.deadErrors.Load(),
	}
	s.mu.Lock()
	st.State, st.LastStatus, st.ConsecutiveFailures, st.LocalState = s.state, s.lastStatus, s.failures, s.local
	if !s.outage.IsZero() {
		st.OutageStartNS = s.outage.UnixNano()
	}
	s.mu.Unlock()
	return st
}

// Run ships until ctx is done and returns nil then; every other failure is
// logged once per change, backed off and retried. A batch in flight when ctx
// ends is not acknowledged: it stays in the spool and goes again after a
// restart.
func (s *Shipper) Run(ctx context.Context) error {
	defer s.closeFiles()
	var readBackoff, ackBackoff time.Duration
	for ctx.Err() == nil {
		if s.rd == nil {
			s.rd = s.q.reader()
		}
		if err := s.collect(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			// Re-open: the new reader starts after the acknowledged position,
			// so the points of the abandoned batch are read again.
			s.readerErrors.Add(1)
			s.localFailed("spool_read", fmt.Errorf("influx: reading the spool: %w", err))
			s.rd.Close()
			s.rd = nil
			s.pause(ctx, &readBackoff)
			continue
		}
		readBackoff = 0
		dead, err := s.send(ctx, s.buf, s.batch.Points)
		if err == nil {
			err = s.flushDead(ctx)
		}
		if err != nil {
			break // ctx is done
		}
		for {
			err := s.q.Ack(s.batch, dead)
			if err == nil {
				break
			}
			s.ackErrors.Add(1)
			s.localFailed("spool_ack", fmt.Errorf("influx: acknowledging seq %d-%d: %w", s.batch.FirstSeq, s.batch.LastSeq, err))
			if !s.pause(ctx, &ackBackoff) {
				return nil
			}
		}
		ackBackoff = 0
		s.localOK()
		s.batches.Add(1)
		s.points.Add(uint64(s.batch.Points - dead))
		s.bytes.Add(uint64(len(s.buf)))
	}
	return nil
}

// pause sleeps the next step of a capped exponential backoff; false when ctx
// ended first.
func (s *Shipper) pause(ctx context.Context, backoff *time.Duration) bool {
	*backoff = min(max(2**backoff, s.cfg.MinBackoff), s.cfg.MaxBackoff)
	delay := *backoff/2 + rand.N(*backoff/2+1)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Shipper) closeFiles() {
	if s.rd != nil {
		s.rd.Close()
		s.rd = nil
	}
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
				if errors.Is(err, context.DeadlineExceeded) {
					return nil // the interval is over: send what we have
				}
				return err
			}
		}
		s.buf = append(s.buf, e.Lines...)
		s.batch.LastSeq = e.LastSeq()
		s.batch.Points += int(e.Points)
	}
	return nil
}

// send delivers lines, retrying whatever may succeed later, halving batches the
// server finds too large and bisecting batches it rejects for good. Rejected
// lines are gathered in s.dead; it returns how many. The only error is ctx's.
func (s *Shipper) send(ctx context.Context, lines []byte, points int) (int, error) {
	var backoff time.Duration
	for {
		err := s.write(ctx, lines)
		if err == nil {
			s.succeeded()
			return 0, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		s.lastErr.Store(err.Error())
		c := classify(err)
		switch {
		case c.reject:
			s.succeeded() // the server is there and judged the lines
			if points <= 1 {
				s.rejectLine(lines, err)
				return points, nil
			}
			return s.halves(ctx, lines, points)
		case c.status == 413 && points > 1:
			s.splits.Add(1)
			return s.halves(ctx, lines, points)
		}
		s.failed(c, err)
		s.retries.Add(1)
		if c.retryAfter > 0 {
			backoff = min(c.retryAfter, s.cfg.MaxRetryAfter)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
			backoff = s.cfg.MaxBackoff / 2
			continue
		}
		if !s.pause(ctx, &backoff) {
			return 0, ctx.Err()
		}
	}
}

// halves sends each half of lines on its own.
func (s *Shipper) halves(ctx context.Context, lines []byte, points int) (int, error) {
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

func (s *Shipper) write(ctx context.Context, lines []byte) error {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	start := time.Now()
	s.requests.Add(1)
	err := s.api.WriteRecord(rctx, string(lines))
	s.lastLatency.Store(int64(time.Since(start)))
	return err
}

// rejectLine keeps a line the server rejected for good, with its cause, for
// flushDead.
func (s *Shipper) rejectLine(line []byte, cause error) {
	msg := strings.ReplaceAll(cause.Error(), "\n", " ")
	s.dead = fmt.Appendf(s.dead, "# %s rejected: %s\n", time.Now().UTC().Format(time.RFC3339Nano), msg)
	s.dead = append(s.dead, line...)
	if len(line) > 0 && line[len(line)-1] != '\n' {
		s.dead = append(s.dead, '\n')
	}
	s.nDead++
}

// flushDead appends the batch's rejected lines to the dead-letter file with
// one fsync, retrying until it succeeds or ctx ends: the batch is acknowledged
// only once its rejected lines are safe.
func (s *Shipper) flushDead(ctx context.Context) error {
	if s.nDead == 0 {
		return nil
	}
	var backoff time.Duration
	for {
		err := appendSync(s.cfg.DeadLetter, s.dead)
		if err == nil {
			break
		}
		s.deadErrors.Add(1)
		s.localFailed("dead_letter", err)
		if !s.pause(ctx, &backoff) {
			return ctx.Err()
		}
	}
	s.deadLettered.Add(uint64(s.nDead))
	s.dead, s.nDead = s.dead[:0], 0
	return nil
}

// appendSync appends b to path and fsyncs it; on failure it cuts the file back
// so that a retry does not repeat lines. The file is opened per call, so a
// replay can move it aside while the agent runs.
func appendSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("influx dead-letter %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("influx dead-letter %s: %w", path, err)
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Truncate(st.Size())
		return fmt.Errorf("influx dead-letter %s: %w", path, err)
	}
	return nil
}

// answer is what a failed write means.
type answer struct {
	status     int           // HTTP status; 0 when none came
	state      string        // the server state it puts the shipper in
	reject     bool          // the server rejected lines of the batch for good
	retryAfter time.Duration // the server's Retry-After
	msg        string        // the server's message
}

// rejection are the messages of InfluxDB 1.x, 2.x and 3.x that say lines of a
// batch were refused for what they are (not for who sent them or where).
var rejection = []string{
	"partial write", "field type conflict", "unable to parse", "bad timestamp",
	"invalid field", "missing field", "missing tag", "invalid number", "invalid boolean",
	"unbalanced quotes", "invalid line protocol", "failed to parse", "parsing failed",
}

// classify says what a failed write means. Only a 400 or 422 whose body names
// a rejection of lines is the batch's fault; everything else is the server's or
// the network's, and is retried.
func classify(err error) answer {
	var he *ihttp.Error
	if !errors.As(err, &he) {
		a := answer{state: StateBadAnswer, msg: err.Error()}
		if isNetwork(err) {
			a.state = StateUnreachable
		}
		if isTLS(err) {
			a.state = StateTLS
		}
		return a
	}
	a := answer{status: he.StatusCode, msg: strings.TrimSpace(he.Code + " " + he.Message)}
	if he.RetryAfter > 0 {
		a.retryAfter = time.Duration(he.RetryAfter) * time.Second
	}
	if he.StatusCode == 0 {
		a.msg = err.Error()
		a.state = StateUnreachable
		if isTLS(err) {
			a.state = StateTLS
		}
		return a
	}
	switch st := he.StatusCode; {
	case st == 400 || st == 422:
		a.state = StateBadAnswer
		if he.Err == nil { // the body was read and decoded
			m := strings.ToLower(he.Message + " " + he.Code)
			for _, r := range rejection {
				if strings.Contains(m, r) {
					a.reject = true
				}
			}
		} else {
			a.msg = fmt.Sprintf("%d with an unreadable body: %v", st, he.Err)
		}
	case st == 401:
		a.state = StateUnauthorized
	case st == 403:
		a.state = StateForbidden
	case st == 404:
		a.state = StateNotFound
	case st == 413:
		a.state = StateTooLarge
	case st == 429:
		a.state = StateThrottled
	case st == 408 || st >= 500:
		a.state = StateServerError
	default:
		a.state = StateBadAnswer
	}
	return a
}

func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

func isTLS(err error) bool {
	var (
		rec  tls.RecordHeaderError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		inv  x509.CertificateInvalidError
		alrt tls.AlertError
	)
	return errors.As(err, &rec) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) ||
		errors.As(err, &inv) || errors.As(err, &alrt) || strings.Contains(err.Error(), "tls: ")
}

// succeeded records an answer from a working server, logging the recovery.
func (s *Shipper) succeeded() {
	s.mu.Lock()
	was, outage := s.state, s.outage
	s.state, s.outage, s.failures, s.lastStatus = StateOK, time.Time{}, 0, 204
	s.mu.Unlock()
	if was != StateOK && s.log != nil {
		backlog := s.q.Stats().Pending
		s.log.Info(fmt.Sprintf("InfluxDB reachable again after %v, %d points waiting", time.Since(outage).Round(time.Millisecond), backlog),
			"url", s.cfg.URL, "was", was, "outage_ns", int64(time.Since(outage)), "backlog_points", backlog)
	}
}

// failed records a failed attempt, logging when the state changes.
func (s *Shipper) failed(a answer, err error) {
	s.mu.Lock()
	was := s.state
	s.state, s.lastStatus = a.state, a.status
	s.failures++
	if s.outage.IsZero() {
		s.outage = time.Now()
	}
	s.mu.Unlock()
	if was == a.state || s.log == nil {
		return
	}
	s.log.Error(s.advice(a), "url", s.cfg.URL, "state", a.state, "status", a.status, "err", err)
}

// advice is the one loud line for a new state: the cause and the fix.
func (s *Shipper) advice(a answer) string {
	switch a.state {
	case StateUnauthorized:
		return "InfluxDB answered 401 Unauthorized: check influx.token_file / influx.token_env; retrying"
	case StateForbidden:
		return fmt.Sprintf("InfluxDB answered 403 Forbidden: the token may not write to bucket %q; give it write permission or fix influx.token_file / influx.token_env; retrying", s.cfg.Bucket)
	case StateNotFound:
		return fmt.Sprintf("InfluxDB answered 404: database/bucket not found: create it or fix influx.bucket (%q); retrying (%s)", s.cfg.Bucket, a.msg)
	case StateUnreachable:
		return fmt.Sprintf("InfluxDB unreachable at %s: %s; retrying", s.cfg.URL, a.msg)
	case StateTLS:
		return fmt.Sprintf("TLS with InfluxDB at %s failed: %s; check the server certificate and influx.url; retrying", s.cfg.URL, a.msg)
	case StateTooLarge:
		return "InfluxDB answered 413 Request Entity Too Large for a single line: raise the server's request size limit; retrying"
	case StateThrottled:
		return "InfluxDB answered 429 Too Many Requests: writes are throttled; retrying"
	case StateServerError:
		return fmt.Sprintf("InfluxDB answered %d: server error (%s); retrying", a.status, a.msg)
	default:
		return fmt.Sprintf("InfluxDB answered %d with an answer that does not reject lines (%s): retrying rather than dropping data", a.status, a.msg)
	}
}

// localFailed records a failing local step (reading the spool, acknowledging,
// writing the dead-letter file), logging when it changes.
func (s *Shipper) localFailed(step string, err error) {
	s.lastErr.Store(err.Error())
	s.mu.Lock()
	was := s.local
	s.local = step
	s.mu.Unlock()
	if was != step && s.log != nil {
		s.log.Error("influx shipper: "+step+" failing; backing off and retrying", "err", err)
	}
}

func (s *Shipper) localOK() {
	s.mu.Lock()
	was := s.local
	s.local = "ok"
	s.mu.Unlock()
	if was != "ok" && s.log != nil {
		s.log.Info("influx shipper: " + was + " working again")
	}
}
