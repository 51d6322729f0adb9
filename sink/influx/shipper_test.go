package influx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// scripted answers each request with the next error of its script (nil: take
// the lines), then accepts everything; tooLarge answers 413 to bodies of more
// lines than that.
type scripted struct {
	mu       sync.Mutex
	script   []error
	tooLarge int
	got      map[string]int
	requests int
}

func (f *scripted) WriteRecord(ctx context.Context, lines ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if len(f.script) > 0 {
		err := f.script[0]
		f.script = f.script[1:]
		if err != nil {
			return err
		}
	}
	body := strings.TrimSpace(strings.Join(lines, "\n"))
	n := strings.Count(body, "\n") + 1
	if f.tooLarge > 0 && n > f.tooLarge {
		return &ihttp.Error{StatusCode: 413, Code: "413 Request Entity Too Large", Message: "request too large"}
	}
	if f.got == nil {
		f.got = map[string]int{}
	}
	for _, l := range strings.Split(body, "\n") {
		f.got[l]++
	}
	return nil
}

func (f *scripted) distinct() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// Issue 10 item 4: a wrong token, a missing database, a 400 about the
// request, a TLS failure are not the batch's fault: the points wait and
// arrive, none is dead-lettered. Issue 20 item 4: neither are 413s and 400s
// without a reason while the server takes nothing: nothing proves the lines
// are at fault, so the batch is bisected (they might be) and then held.
func TestFixableServerErrorsAreRetriedNotDeadLettered(t *testing.T) {
	cases := map[string]error{
		"401":             &ihttp.Error{StatusCode: 401, Code: "unauthorized", Message: "unauthorized access"},
		"403":             &ihttp.Error{StatusCode: 403, Code: "forbidden", Message: "insufficient permissions"},
		"404":             &ihttp.Error{StatusCode: 404, Code: "404 Not Found", Message: `database not found: "x"`},
		"400 db name":     &ihttp.Error{StatusCode: 400, Code: "invalid", Message: "error validating database name: invalid character"},
		"tls":             ihttp.NewError(errors.New(`Post "https://x/api/v2/write": tls: failed to verify certificate`)),
		"413 single line": &ihttp.Error{StatusCode: 413},
		"400 truncated":   &ihttp.Error{StatusCode: 400, Err: errors.New("unexpected EOF")},
		"400 proxy page":  &ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "<html>bad gateway config</html>"},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			srv := &scripted{script: repeat(e, 20)}
			sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b"}, recsN(100))
			runUntil(t, sh, func() bool { return sp.Stats().Acknowledged == 100 })
			st := sh.Stats()
			if st.DeadLettered != 0 || sp.Stats().DeadLettered != 0 || srv.distinct() != 100 || st.State != StateOK {
				t.Fatalf("shipper %+v, spool %+v, server has %d", st, sp.Stats(), srv.distinct())
			}
			if _, err := os.Stat(filepath.Join(sp.Dir(), "deadletter.lp")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a dead-letter file exists: %v", err)
			}
			// Answers about the server are retried in place; refusals of
			// unknown cause are isolated within the budget, then held.
			if st.Retries+st.IsolateRequests < 20 || st.Requests > 20+uint64(isolationBudget(100))+2 {
				t.Fatalf("%d requests (%d retries, %d isolating) for 20 refusals", st.Requests, st.Retries, st.IsolateRequests)
			}
		})
	}
}

// Issue 10 item 4: a 413 halves the batch until the pieces fit.
func TestTooLargeSplitsTheBatch(t *testing.T) {
	srv := &scripted{tooLarge: 30}
	sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b"}, recsN(1000))
	runUntil(t, sh, func() bool { return sp.Stats().Acknowledged == 1000 })
	if st := sh.Stats(); st.Splits == 0 || st.DeadLettered != 0 || srv.distinct() != 1000 {
		t.Fatalf("shipper %+v, server has %d", st, srv.distinct())
	}
}

// logs captures log lines.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Issue 10 items 4 and 6: one loud line per state change naming the cause and
// the fix, one when writes work again, and the state in Stats meanwhile.
func TestOneLogLinePerStateChange(t *testing.T) {
	var script []error
	script = append(script, repeat(ihttp.NewError(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")), 5)...)
	script = append(script, repeat(&ihttp.Error{StatusCode: 401, Code: "unauthorized", Message: "unauthorized access"}, 5)...)
	script = append(script, repeat(&ihttp.Error{StatusCode: 404, Code: "404 Not Found", Message: `database not found: "x"`}, 5)...)
	srv := &scripted{script: script}
	var out logs
	cfg := Config{URL: "http://influx.example:8086", Bucket: "b"}
	sp, sh := shipWith(t, srv, cfg, recsN(10))
	sh.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
	var sawState sync.Map
	runUntil(t, sh, func() bool {
		st := sh.Stats()
		if st.State != StateOK {
			sawState.Store(st.State, st)
			if st.OutageStartNS == 0 || st.ConsecutiveFailures == 0 {
				t.Errorf("state %s without an outage start or failure count: %+v", st.State, st)
			}
		}
		return sp.Stats().Acknowledged == 10
	})
	text := out.String()
	for _, want := range []string{
		"InfluxDB unreachable at http://influx.example:8086",
		"InfluxDB answered 401 Unauthorized: check influx.token_file / influx.token_env",
		"database/bucket not found: create it or fix influx.bucket",
		"InfluxDB reachable again after",
	} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, text)
		}
	}
	if n := strings.Count(text, "\n"); n != 4 {
		t.Errorf("%d log lines, want 4:\n%s", n, text)
	}
	if !strings.Contains(text, "points waiting") {
		t.Errorf("recovery line without the backlog:\n%s", text)
	}
	st := sh.Stats()
	if st.State != StateOK || st.OutageStartNS != 0 || st.ConsecutiveFailures != 0 {
		t.Fatalf("after recovery %+v", st)
	}
	if _, ok := sawState.Load(StateUnauthorized); !ok {
		t.Log("the 401 state was not sampled (it is short); the log covers it")
	}
}

// faultyQueue makes the spool's reader and Ack fail now and then.
type faultyQueue struct {
	spoolQueue
	reads, acks       atomic.Int64
	readEvery, ackOdd int64
	opened            atomic.Int64
}

type faultyReader struct {
	*spool.Reader
	q *faultyQueue
}

var errInjected = errors.New("injected failure")

func (q *faultyQueue) reader() entryReader {
	q.opened.Add(1)
	return faultyReader{q.Spool.NewReader(), q}
}

func (r faultyReader) fail() bool { return r.q.reads.Add(1)%r.q.readEvery == 0 }

func (r faultyReader) Next(ctx context.Context) (spool.Entry, error) {
	if r.fail() {
		return spool.Entry{}, errInjected
	}
	return r.Reader.Next(ctx)
}

func (r faultyReader) TryNext() (spool.Entry, bool, error) {
	if r.fail() {
		return spool.Entry{}, false, errInjected
	}
	return r.Reader.TryNext()
}

func (q *faultyQueue) Ack(b spool.Batch, dead int) error {
	if q.acks.Add(1)%2 == 1 && q.acks.Load() < q.ackOdd {
		return errInjected
	}
	return q.spoolQueue.Ack(b, dead)
}

// Issue 10 item 5: reader and ack failures are survived: the shipper backs off,
// re-opens its reader and goes on, and every point arrives.
func TestShipperSurvivesReaderAndAckFailures(t *testing.T) {
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	q := &faultyQueue{spoolQueue: spoolQueue{sp}, readEvery: 7, ackOdd: 40}
	srv := &scripted{}
	var out logs
	sh := newShipper(Config{URL: "x", Bucket: "b", BatchPoints: 50, BatchInterval: 5 * time.Millisecond,
		MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}, q, srv)
	sh.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
	const total = 5000
	go func() {
		for i := 0; i < total; i += 50 {
			recs := make([]record.Record, 50)
			for k := range recs {
				recs[k] = point(i+k, "v")
			}
			sp.Append(recs)
			time.Sleep(time.Millisecond)
		}
	}()
	runUntil(t, sh, func() bool { return srv.distinct() == total && sp.Stats().Acknowledged >= total })
	st := sh.Stats()
	if st.ReaderErrors == 0 || st.AckErrors == 0 || q.opened.Load() < 2 {
		t.Fatalf("no failures injected: %+v, readers opened %d", st, q.opened.Load())
	}
	if st.DeadLettered != 0 {
		t.Fatalf("after the run %+v", st)
	}
	text := out.String() // (an idle reader may have just failed again: LocalState is not asserted)
	if !strings.Contains(text, "spool_read failing") || !strings.Contains(text, "spool_ack failing") || !strings.Contains(text, "working again") {
		t.Fatalf("failures not logged:\n%s", text)
	}
	if n := strings.Count(text, "\n"); uint64(n) > 2*(st.ReaderErrors+st.AckErrors) {
		t.Fatalf("%d log lines for %d failures", n, st.ReaderErrors+st.AckErrors)
	}
	t.Logf("%d reader errors, %d ack errors, %d readers opened, %d log lines; %+v", st.ReaderErrors, st.AckErrors, q.opened.Load(), strings.Count(text, "\n"), sp.Stats())
}

// Issue 10 item 5: a dead-letter file that cannot be written holds the batch
// back (retried, logged once) instead of stopping the shipper or losing the
// rejected line; once writable, the line lands there and the rest arrives.
func TestDeadLetterFailuresAreRetried(t *testing.T) {
	srv := &fakeServer{}
	dir := t.TempDir()
	dl := filepath.Join(dir, "missing", "deadletter.lp")
	recs := recsN(10)
	recs[3] = point(3, "bad")
	var out logs
	sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b", DeadLetter: dl}, recs)
	sh.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
	go func() {
		for sh.Stats().DeadLetterErrors < 5 {
			time.Sleep(time.Millisecond)
		}
		os.Mkdir(filepath.Join(dir, "missing"), 0o755)
	}()
	runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == 10 })
	b, err := os.ReadFile(dl)
	if err != nil || strings.Count(string(b), `bad="3"`) != 1 || sp.Stats().DeadLettered != 1 || len(srv.lines()) != 9 {
		t.Fatalf("dead-letter file %q (%v), spool %+v, server %d", b, err, sp.Stats(), len(srv.lines()))
	}
	if n := strings.Count(out.String(), "dead_letter failing"); n != 1 {
		t.Fatalf("dead-letter failure logged %d times:\n%s", n, out.String())
	}
}

// cycle answers each request with the next error of a repeating cycle (nil:
// take the lines) until until requests, then takes everything.
type cycle struct {
	mu       sync.Mutex
	answers  []error
	until    int
	requests int
	taken    int
}

func (c *cycle) WriteRecord(ctx context.Context, lines ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if c.requests <= c.until {
		if err := c.answers[(c.requests-1)%len(c.answers)]; err != nil {
			return err
		}
	}
	c.taken += strings.Count(strings.Join(lines, "\n"), "\n")
	return nil
}

// Issue 20 item 14: a server failing N attempts, changing its answer on every
// one (or failing and recovering batch after batch), logs a bounded number of
// lines, not one per attempt: each state once, 8 repeats per
// LogSummaryInterval, the rest counted (LogSuppressed) and named in the next
// line.
func TestLogLinesBoundedWhileFlapping(t *testing.T) {
	refused := ihttp.NewError(errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	unavailable := &ihttp.Error{StatusCode: 503, Code: "unavailable", Message: "try later"}
	unauthorized := &ihttp.Error{StatusCode: 401, Code: "unauthorized", Message: "unauthorized access"}
	cases := []struct {
		name    string
		answers []error
		states  int // distinct states the cycle goes through, ok included
		batch   int
	}{
		{"three failing states", []error{refused, unavailable, unauthorized}, 4, 5000},
		{"failing and recovering", []error{unavailable, nil}, 2, 1},
	}
	for _, c := range cases {
		lines := map[int]int{}
		for _, n := range []int{50, 500} {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				srv := &cycle{answers: c.answers, until: n}
				var out logs
				cfg := Config{URL: "http://influx.example:8086", Bucket: "b", BatchPoints: c.batch, HoldBackoff: time.Millisecond,
					MaxBackoff: time.Millisecond}
				sp, sh := shipWith(t, srv, cfg, nil)
				sh.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
				for _, r := range recsN(n) { // an entry, and so a batch, per point
					sp.Append([]record.Record{r})
					sp.Flush()
				}
				runUntil(t, sh, func() bool {
					srv.mu.Lock()
					defer srv.mu.Unlock()
					return srv.requests > n && sp.Stats().Acknowledged == uint64(n)
				})
				text := out.String()
				lines[n] = strings.Count(text, "\n")
				st := sh.Stats()
				t.Logf("%d attempts (%d retries): %d log lines, %d not logged", srv.requests, st.Retries, lines[n], st.LogSuppressed)
				if bound := c.states + logBurst; lines[n] > bound {
					t.Fatalf("%d log lines for %d attempts (bound %d):\n%s", lines[n], n, bound, text)
				}
				if uint64(lines[n])+st.LogSuppressed < st.Retries {
					t.Fatalf("%d lines and %d suppressed for %d failures: some changes are neither logged nor counted", lines[n], st.LogSuppressed, st.Retries)
				}
				if strings.Count(text, "are only counted until") != 1 {
					t.Fatalf("the log does not say once that further changes are only counted:\n%s", text)
				}
			})
		}
		if lines[500] != lines[50] {
			t.Errorf("%s: %d lines for 50 attempts, %d for 500", c.name, lines[50], lines[500])
		}
	}
}

// Issue 20 item 14: while writes fail, one line on entering the state, then a
// summary every LogSummaryInterval (attempts, last error), and the recovery
// with the outage's length and its failed attempts: not a line per attempt.
func TestSummaryWhileFailing(t *testing.T) {
	const interval = 100 * time.Millisecond
	var failing atomic.Bool
	failing.Store(true)
	srv := &switchable{fail: &failing, err: &ihttp.Error{StatusCode: 503, Code: "unavailable", Message: "disk full"}}
	var out logs
	cfg := Config{URL: "http://influx.example:8086", Bucket: "b", MaxBackoff: 2 * time.Millisecond, LogSummaryInterval: interval}
	sp, sh := shipWith(t, srv, cfg, recsN(10))
	sh.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
	start := time.Now()
	go func() {
		time.Sleep(time.Second)
		failing.Store(false)
	}()
	runUntil(t, sh, func() bool { return sp.Stats().Acknowledged == 10 })
	elapsed := time.Since(start)
	text := out.String()
	st := sh.Stats()
	summaries := strings.Count(text, "still failing")
	t.Logf("%d attempts in %v, %d summaries:\n%s", st.Retries, elapsed, summaries, text)
	if n := strings.Count(text, "server error"); n != 1 {
		t.Fatalf("the state was entered %d times, want once", n)
	}
	if max := int(elapsed/interval) + 1; summaries < 3 || summaries > max {
		t.Fatalf("%d summaries in %v (one per %v: at most %d)", summaries, elapsed, interval, max)
	}
	if !strings.Contains(text, "failed attempts, last error: HTTP 503: unavailable: disk full") {
		t.Fatalf("a summary without attempts or the last error:\n%s", text)
	}
	if want := fmt.Sprintf("(%d failed attempts)", st.Retries); !strings.Contains(text, "reachable again after") || !strings.Contains(text, want) {
		t.Fatalf("no recovery line with %q:\n%s", want, text)
	}
	if lines := strings.Count(text, "\n"); uint64(lines) >= st.Retries/4 {
		t.Fatalf("%d log lines for %d failed attempts", lines, st.Retries)
	}
}

// switchable fails every request with err while fail is set.
type switchable struct {
	fail *atomic.Bool
	err  error
}

func (s *switchable) WriteRecord(ctx context.Context, lines ...string) error {
	if s.fail.Load() {
		return s.err
	}
	return nil
}
