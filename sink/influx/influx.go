package influx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/influxdata/influxdb-client-go/v2/api"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/influxdata/influxdb-client-go/v2/api/write"

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
	MaxBackoff    time.Duration // cap on retry delay while the server or network fails (default 1 s)
	HoldBackoff   time.Duration // cap on retry delay in a configuration state: 401, 403, 404, a held batch (default 30 s)
	MaxRetryAfter time.Duration // cap on a server's Retry-After (default 60 s)
	Gzip          bool
	DeadLetter    string // file rejected lines are appended to ("" = <spool>/deadletter.lp)
	// DeadLetterMaxBytes caps the dead-letter file: a batch's rejected lines
	// that would take it beyond are not kept, and counted
	// (Stats.DeadLetterDropped); a replay moves the file aside and makes
	// room. Default 64 MiB.
	DeadLetterMaxBytes int64

	// LogSummaryInterval is how often a failing shipper says it still fails,
	// and the window in which at most logBurst changes of one kind are logged
	// (the others are counted in the next line). Default 10 min.
	LogSummaryInterval time.Duration
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
	if c.HoldBackoff <= 0 {
		c.HoldBackoff = max(30*time.Second, c.MaxBackoff)
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Minute
	}
	if c.DeadLetterMaxBytes <= 0 {
		c.DeadLetterMaxBytes = DefaultDeadLetterMaxBytes
	}
	if c.LogSummaryInterval <= 0 {
		c.LogSummaryInterval = 10 * time.Minute
	}
}

// DefaultDeadLetterMaxBytes is the dead-letter file's default cap: room for
// some 300,000 rejected lines of the agent's records, small beside a board's
// card.
const DefaultDeadLetterMaxBytes = 64 << 20

// Server states, as Stats.State reports them.
const (
	StateOK           = "ok"
	StateUnreachable  = "unreachable"  // network error or timeout
	StateTLS          = "tls"          // TLS handshake or certificate failure
	StateUnauthorized = "unauthorized" // 401
	StateForbidden    = "forbidden"    // 403
	StateNotFound     = "not_found"    // 404: database or bucket missing
	StateBadRequest   = "bad_request"  // a 400 about the request, not its lines (database name, precision, authorization header)
	StateTooLarge     = "too_large"    // 413 even for pieces the server is not shown to take: the batch is held
	StateThrottled    = "throttled"    // 429
	StateServerError  = "server_error" // 408, 5xx
	StateBadAnswer    = "bad_answer"   // an unexpected status; or 400s without a reason to every part of a batch: the batch is held
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

	// DeadLettered by the server's reason (they add up to DeadLettered).
	RejectedSyntax      uint64 // line protocol the server could not parse
	RejectedSchema      uint64 // field type or schema conflicts
	RejectedRetention   uint64 // timestamps outside the retention policy
	RejectedLimit       uint64 // server limits: series, values per tag, columns
	RejectedTooLarge    uint64 // single lines larger than the server's request limit
	RejectedUnexplained uint64 // lines isolated by bisecting 400s that gave no reason
	RejectedOther       uint64

	PartialWrites   uint64 // answers saying the server wrote part of a request and refused the rest
	IsolateRequests uint64 // requests sent to isolate refused lines (bisection, re-sends without the named lines)
	HeldBatches     uint64 // times a batch was held because the server refused every part of it without a reason
	LogSuppressed   uint64 // state changes not logged (more than logBurst in LogSummaryInterval); counted in the next line
	LastError       string // the last failure (no secrets)
	LastLatency     time.Duration

	State               string // StateOK or why writes fail now
	LastStatus          int    // HTTP status of the last answer (0: none, network error)
	OutageStartNS       int64  // REALTIME ns of the first failure of the current outage; 0 when State is ok
	ConsecutiveFailures uint64 // failed attempts since the last success

	LocalState       string // "ok", or the local step failing now: "spool_read", "spool_ack", "dead_letter"
	ReaderErrors     uint64
	AckErrors        uint64
	DeadLetterErrors uint64
	// DeadLetterDropped is rejected lines not kept in the dead-letter file
	// because it reached Config.DeadLetterMaxBytes.
	DeadLetterDropped uint64
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
	cfg     Config
	log     *slog.Logger
	q       queue
	rd      entryReader
	api     writer
	safeURL string            // cfg.URL with its password redacted
	redact  *strings.Replacer // cfg.URL and its user info out of every string the shipper produces

	buf    []byte // the batch being sent
	batch  spool.Batch
	dead   []byte // lines of the current batch rejected for good, with their causes
	nDead  int
	deadBy [len(causes)]int // the current batch's dead lines by cause
	first  answer           // the first refusal of the current batch, for the log
	capt   capture          // the body of the last request's answer, when not a success

	batches, points, bytes, retries, deadLettered, requests, splits atomic.Uint64
	readerErrors, ackErrors, deadErrors, deadDropped                atomic.Uint64
	partialWrites, isolateRequests, heldBatches, logSuppressed      atomic.Uint64
	rejected                                                        [len(causes)]atomic.Uint64
	lastLatency                                                     atomic.Int64
	lastErr                                                         atomic.Value // string

	mu         sync.Mutex // guards the state below, read by Stats
	state      string
	lastStatus int
	outage     time.Time
	failures   uint64
	local      string

	// Used by Run's goroutine only.
	lastOK                    bool      // the last request was accepted
	summarized                time.Time // last "still failing" line, or the outage's start
	srvLog, localLog, deadLog limiter
	localSince                time.Time
	localFailures             uint64
}

// causes index Stats' Rejected* counters.
var causes = [...]string{causeSyntax, causeSchema, causeRetention, causeLimit, causeTooLarge, causeUnexplained, causeOther}

// New returns a shipper for sp.
func New(cfg Config, sp *spool.Spool) (*Shipper, error) {
	return newWithClient(cfg, spoolQueue{sp})
}

// newWithClient is New for any queue.
func newWithClient(cfg Config, q queue) (*Shipper, error) {
	cfg.defaults()
	if cfg.URL == "" || cfg.Bucket == "" {
		return nil, errors.New("influx: url and bucket are required")
	}
	// What influxdb2.NewClientWithOptions(...).WriteAPIBlocking(org, bucket)
	// builds, without the client: its other APIs (query, buckets, tasks,
	// ...) and their generated types would cost the board's binary some
	// 0.6 MB (docs/performance.md), reached or not.
	url := cfg.URL
	if !strings.HasSuffix(url, "/") {
		url += "/" // the library joins "api/v2/write" to it
	}
	auth := ""
	if cfg.Token != "" {
		auth = "Token " + cfg.Token
	}
	svc := ihttp.NewService(url, auth, ihttp.DefaultOptions().SetHTTPClient(httpClient(cfg)))
	wopts := write.DefaultOptions().SetPrecision(time.Nanosecond).SetUseGZip(false) // the transport compresses (httpClient)
	s := newShipper(cfg, q, api.NewWriteAPIBlocking(cfg.Org, cfg.Bucket, svc, wopts))
	return s, nil
}

func newShipper(cfg Config, q queue, w writer) *Shipper {
	cfg.defaults()
	if cfg.DeadLetter == "" {
		cfg.DeadLetter = filepath.Join(q.Dir(), "deadletter.lp")
	}
	s := &Shipper{cfg: cfg, q: q, api: w, state: StateOK, local: "ok"}
	s.safeURL, s.redact = redactor(cfg.URL)
	s.lastErr.Store("")
	return s
}

// SetLogger gives the shipper its logger (none: it logs nothing): a line
// per change of its state (the server's answer, or a local spool or
// dead-letter failure) and, while writes fail, a summary every
// LogSummaryInterval. Call it before Run.
func (s *Shipper) SetLogger(l *slog.Logger) { s.log = l }

// DeadLetterPath is the file rejected lines go to.
func (s *Shipper) DeadLetterPath() string { return s.cfg.DeadLetter }

// Stats returns the counters and state.
func (s *Shipper) Stats() Stats {
	st := Stats{
		Batches: s.batches.Load(), Points: s.points.Load(), Bytes: s.bytes.Load(), Retries: s.retries.Load(),
		DeadLettered: s.deadLettered.Load(), Requests: s.requests.Load(), Splits: s.splits.Load(),
		LastError: s.lastErr.Load().(string), LastLatency: time.Duration(s.lastLatency.Load()),
		ReaderErrors: s.readerErrors.Load(), AckErrors: s.ackErrors.Load(), DeadLetterErrors: s.deadErrors.Load(), DeadLetterDropped: s.deadDropped.Load(),
		RejectedSyntax: s.rejected[0].Load(), RejectedSchema: s.rejected[1].Load(), RejectedRetention: s.rejected[2].Load(),
		RejectedLimit: s.rejected[3].Load(), RejectedTooLarge: s.rejected[4].Load(), RejectedUnexplained: s.rejected[5].Load(),
		RejectedOther: s.rejected[6].Load(),
		PartialWrites: s.partialWrites.Load(), IsolateRequests: s.isolateRequests.Load(), HeldBatches: s.heldBatches.Load(),
		LogSuppressed: s.logSuppressed.Load(),
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
			s.pause(ctx, &readBackoff, s.cfg.MaxBackoff)
			continue
		}
		readBackoff = 0
		err := s.deliver(ctx)
		if err == nil {
			err = s.flushDead(ctx)
		}
		if err != nil {
			break // ctx is done
		}
		dead := s.nDead
		for {
			err := s.q.Ack(s.batch, dead)
			if err == nil {
				break
			}
			s.ackErrors.Add(1)
			s.localFailed("spool_ack", fmt.Errorf("influx: acknowledging seq %d-%d: %w", s.batch.FirstSeq, s.batch.LastSeq, err))
			if !s.pause(ctx, &ackBackoff, s.cfg.MaxBackoff) {
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

// pause sleeps the next step of an exponential backoff capped at limit; false
// when ctx ended first.
func (s *Shipper) pause(ctx context.Context, backoff *time.Duration, limit time.Duration) bool {
	*backoff = min(max(2**backoff, s.cfg.MinBackoff), limit)
	return sleep(ctx, *backoff/2+rand.N(*backoff/2+1))
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
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
