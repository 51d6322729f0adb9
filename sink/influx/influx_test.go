package influx

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// fakeServer fails the first failFirst requests with status failStatus, and
// rejects (400) any request containing a line with "bad".
type fakeServer struct {
	mu         sync.Mutex
	failFirst  int
	failStatus int
	refusal    error // the answer to a request with a "bad" line (default: 1.8's partial write)
	requests   int
	got        []string
}

func (f *fakeServer) WriteRecord(ctx context.Context, lines ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.requests <= f.failFirst {
		if f.failStatus == 0 {
			return ihttp.NewError(errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
		}
		return &ihttp.Error{StatusCode: f.failStatus, Code: "unavailable", Message: "try later"}
	}
	body := strings.Join(lines, "\n")
	if strings.Contains(body, "bad") {
		if f.refusal != nil {
			return f.refusal
		}
		return &ihttp.Error{StatusCode: 400, Code: "invalid", Message: "partial write: field type conflict: dropped=1"}
	}
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		f.got = append(f.got, l)
	}
	return nil
}

func (f *fakeServer) lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func point(i int, field string) record.Record {
	return record.Record{Measurement: "m", Fields: []record.Field{record.String(field, fmt.Sprint(i))}, TimeNS: int64(i + 1)}
}

func shipWith(t *testing.T, srv writer, cfg Config, recs []record.Record) (*spool.Spool, *Shipper) {
	t.Helper()
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	cfg.MinBackoff = time.Millisecond
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Millisecond
	}
	if cfg.HoldBackoff == 0 {
		cfg.HoldBackoff = 2 * cfg.MaxBackoff
	}
	cfg.BatchInterval = 20 * time.Millisecond
	sh := newShipper(cfg, spoolQueue{sp}, srv)
	if err := sp.Append(recs); err != nil {
		t.Fatal(err)
	}
	return sp, sh
}

func runUntil(t *testing.T, sh *Shipper, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sh.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("not done in 10 s; stats %+v", sh.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestRetriesUntilTheServerAccepts(t *testing.T) {
	for _, status := range []int{0, 429, 500, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := &fakeServer{failFirst: 5, failStatus: status}
			var recs []record.Record
			for i := 0; i < 100; i++ {
				recs = append(recs, point(i, "v"))
			}
			sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b"}, recs)
			runUntil(t, sh, func() bool { return sp.Stats().Acknowledged == 100 })
			if st := sh.Stats(); st.Retries != 5 || st.DeadLettered != 0 || len(srv.lines()) != 100 {
				t.Fatalf("stats %+v, server got %d lines", st, len(srv.lines()))
			}
		})
	}
}

func TestRejectedLinesAreBisectedAndDeadLettered(t *testing.T) {
	srv := &fakeServer{}
	var recs []record.Record
	for i := 0; i < 1000; i++ {
		field := "v"
		if i == 17 || i == 503 {
			field = "bad"
		}
		recs = append(recs, point(i, field))
	}
	sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b"}, recs)
	runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == 1000 })
	st := sp.Stats()
	if st.DeadLettered != 2 || st.Acknowledged != 998 || len(srv.lines()) != 998 {
		t.Fatalf("spool %+v, server got %d", st, len(srv.lines()))
	}
	b, err := os.ReadFile(filepath.Join(sp.Dir(), "deadletter.lp"))
	if err != nil {
		t.Fatal(err)
	}
	// Issue 33 item 2: the agent's records, the owner's alone.
	if fi, err := os.Stat(filepath.Join(sp.Dir(), "deadletter.lp")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("dead-letter file: %v, mode %v, want 0600", err, fi.Mode())
	}
	text := string(b)
	if strings.Count(text, "# ") != 2 || !strings.Contains(text, `bad="17"`) || !strings.Contains(text, `bad="503"`) || !strings.Contains(text, "partial write") {
		t.Fatalf("dead-letter file:\n%s", text)
	}
	if r, max := srv.requests, bisectionBound(1000, 2); r > max {
		t.Fatalf("%d requests to isolate 2 bad lines in 1000, bound %d", r, max)
	}
}

// TestHeldBatchGrows: a batch whose every line is refused without a reason
// is held; the entries behind it join it, and once the server takes them,
// the refused line is shown to be at fault and dead-lettered.
func TestHeldBatchGrows(t *testing.T) {
	srv := &fakeServer{refusal: &ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "<html>400</html>"}}
	sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b"}, []record.Record{point(0, "bad")})
	go func() {
		for sh.Stats().HeldBatches < 3 {
			time.Sleep(time.Millisecond)
		}
		recs := recsN(20)
		sp.Append(recs[1:])
	}()
	runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == 20 })
	if st := sh.Stats(); st.RejectedUnexplained != 1 || len(srv.lines()) != 19 || st.HeldBatches < 3 {
		t.Fatalf("%+v, server has %d", st, len(srv.lines()))
	}
}

// TestBisectionBound (issue 20 item 4): a batch of n lines of which k are
// refused takes at most 1+2k⌈log2 n⌉ requests: ⌈log2 n⌉+1 rounds per refused
// line, a round being both halves of one level. Refusals with a reason (1.8's
// partial write) and without one (a proxy's HTML 400) alike.
func TestBisectionBound(t *testing.T) {
	refusals := map[string]error{
		"reason":    &ihttp.Error{StatusCode: 400, Code: "invalid", Message: "partial write: field type conflict: dropped=1"},
		"no reason": &ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "<html><h1>400 Bad Request</h1></html>"},
	}
	for name, refusal := range refusals {
		for _, n := range []int{1, 2, 64, 777, 1000} {
			for _, k := range []int{1, 2, 5} {
				if k > n || (k == n && name == "no reason") {
					continue // nothing shows the lines are at fault: held (TestRefuseEverythingHoldsTheBatch)
				}
				t.Run(fmt.Sprintf("%s/n=%d/k=%d", name, n, k), func(t *testing.T) {
					srv := &fakeServer{refusal: refusal}
					recs := recsN(n)
					for j := range k {
						i := (j*7919 + 13) % n // spread, and distinct for these n and k
						recs[i] = point(i, "bad")
					}
					sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b", BatchPoints: n}, recs)
					runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == uint64(n) })
					st := sh.Stats()
					if st.DeadLettered != uint64(k) || len(srv.lines()) != n-k || st.Batches != 1 {
						t.Fatalf("%d dead-lettered, %d delivered in %d batches", st.DeadLettered, len(srv.lines()), st.Batches)
					}
					if max := bisectionBound(n, k); srv.requests > max {
						t.Fatalf("%d requests, bound %d", srv.requests, max)
					}
				})
			}
		}
	}
}

// TestClassify: what the client library makes of an answer (no body kept)
// is classified as well: fakes and a missing body take this path.
func TestClassify(t *testing.T) {
	cases := []struct {
		err    error
		code   int
		action action
		state  string
	}{
		{&ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "partial write: field type conflict: dropped=1"}, 400, reject, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400, Code: "invalid", Message: "unable to parse 'm v=': missing field value"}, 400, reject, StateBadAnswer},
		{&ihttp.Error{StatusCode: 422, Code: "unprocessable entity", Message: "failure writing points to database: partial write: field type conflict"}, 422, reject, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400, Err: errors.New("unexpected EOF")}, 400, unexplained, StateBadAnswer}, // truncated JSON body
		{&ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "<html>proxy error</html>"}, 400, unexplained, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400}, 400, unexplained, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400, Code: "invalid", Message: "error validating database name: x"}, 400, hold, StateBadRequest},
		{&ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Header: http.Header{"X-Influxdb-Error": {"partial write: shard 5 is pending deletion dropped=3"}}}, 400, retry, StateServerError},
		{&ihttp.Error{StatusCode: 401}, 401, hold, StateUnauthorized},
		{&ihttp.Error{StatusCode: 403}, 403, hold, StateForbidden},
		{&ihttp.Error{StatusCode: 404, Code: "404 Not Found", Message: `database not found: "x"`}, 404, hold, StateNotFound},
		{&ihttp.Error{StatusCode: 405}, 405, hold, StateBadAnswer},
		{&ihttp.Error{StatusCode: 413}, 413, tooLarge, StateTooLarge},
		{&ihttp.Error{StatusCode: 429, RetryAfter: 3}, 429, retry, StateThrottled},
		{&ihttp.Error{StatusCode: 503}, 503, retry, StateServerError},
		{&ihttp.Error{StatusCode: 500, Code: "internal error", Message: "unexpected error writing points to database: timeout"}, 500, retry, StateServerError},
		{ihttp.NewError(context.DeadlineExceeded), 0, retry, StateUnreachable},
		{ihttp.NewError(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")), 0, retry, StateUnreachable},
		{ihttp.NewError(fmt.Errorf("post: %w", x509.UnknownAuthorityError{})), 0, retry, StateTLS},
		{errors.New("anything else"), 0, hold, StateBadAnswer},
	}
	for _, c := range cases {
		a := classify(c.err, nil)
		if a.status != c.code || a.action != c.action || a.state != c.state {
			t.Errorf("%v: %+v, want status %d action %v state %s", c.err, a, c.code, c.action, c.state)
		}
	}
	if a := classify(&ihttp.Error{StatusCode: 429, RetryAfter: 3}, nil); a.retryAfter != 3*time.Second {
		t.Errorf("retry-after %v", a.retryAfter)
	}
}

func TestRunStopsPromptlyDuringRetries(t *testing.T) {
	srv := &fakeServer{failFirst: 1 << 30, failStatus: 503}
	_, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b", MaxBackoff: time.Hour}, []record.Record{point(1, "v")})
	// Every retry waits 30 to 60 min: a Run that waits out its backoff is
	// told from one that stops at once by a 10 s bound, which no load
	// reaches. (It was a 1 s backoff, cancelled 100 ms in and timed against
	// 200 ms: a loaded machine could miss that, and a backoff still at
	// 64 ms passed it while ignoring the cancellation.)
	sh.cfg.MinBackoff = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sh.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); sh.Stats().Retries == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no failed attempt within 10 s")
		}
	}
	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still waits its backoff 10 s after the cancellation")
	}
	t.Logf("Run stopped %v after the cancellation", time.Since(start))
}

// The dead-letter file has a cap (Config.DeadLetterMaxBytes): rejected lines
// beyond it are not kept and are counted, and the spool goes on (before: the
// file grew without bound). A replay that moves the file aside makes room.
func TestDeadLetterFileHasACap(t *testing.T) {
	srv := &fakeServer{}
	var recs []record.Record
	for i := range 400 {
		field := "v"
		if i%4 == 0 {
			field = "bad"
		}
		recs = append(recs, point(i, field))
	}
	// One spool entry (and so one batch) of 20 lines, 5 of them refused, at a
	// time.
	sp, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b", BatchPoints: 20, DeadLetterMaxBytes: 4096}, recs[:20])
	for i := 20; i < len(recs); i += 20 {
		if err := sp.Append(recs[i : i+20]); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == 400 })
	dl := filepath.Join(sp.Dir(), "deadletter.lp")
	fi, err := os.Stat(dl)
	if err != nil || fi.Size() > 4096 || fi.Size() == 0 {
		t.Fatalf("dead-letter file: %v, %d bytes, want 1..4096; %+v", err, fi.Size(), sh.Stats())
	}
	b, _ := os.ReadFile(dl)
	kept := strings.Count(string(b), `bad="`)
	st := sh.Stats()
	if len(srv.lines()) != 300 || st.DeadLetterDropped == 0 || uint64(kept)+st.DeadLetterDropped != 100 {
		t.Fatalf("server %d lines; %d kept + %d dropped, want 100 rejected in all", len(srv.lines()), kept, st.DeadLetterDropped)
	}
	found := false
	for _, f := range st.Fields() {
		found = found || (f.Key == "dead_letter_dropped" && f.U == st.DeadLetterDropped)
	}
	if !found {
		t.Errorf("monagent_influx lacks dead_letter_dropped: %+v", st.Fields())
	}
}
