package influx

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
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
	text := string(b)
	if strings.Count(text, "# ") != 2 || !strings.Contains(text, `bad="17"`) || !strings.Contains(text, `bad="503"`) || !strings.Contains(text, "partial write") {
		t.Fatalf("dead-letter file:\n%s", text)
	}
	if r := srv.requests; r > 60 {
		t.Fatalf("%d requests to isolate 2 bad lines in 1000", r)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err    error
		code   int
		reject bool
		state  string
	}{
		{&ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "partial write: field type conflict: dropped=1"}, 400, true, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400, Code: "invalid", Message: "unable to parse 'm v=': missing field value"}, 400, true, StateBadAnswer},
		{&ihttp.Error{StatusCode: 422, Code: "unprocessable entity", Message: "failure writing points to database: partial write: field type conflict"}, 422, true, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400, Err: errors.New("unexpected EOF")}, 400, false, StateBadAnswer}, // truncated JSON body
		{&ihttp.Error{StatusCode: 400, Code: "400 Bad Request", Message: "<html>proxy error</html>"}, 400, false, StateBadAnswer},
		{&ihttp.Error{StatusCode: 400}, 400, false, StateBadAnswer},
		{&ihttp.Error{StatusCode: 401}, 401, false, StateUnauthorized},
		{&ihttp.Error{StatusCode: 403}, 403, false, StateForbidden},
		{&ihttp.Error{StatusCode: 404, Code: "404 Not Found", Message: `database not found: "x"`}, 404, false, StateNotFound},
		{&ihttp.Error{StatusCode: 413}, 413, false, StateTooLarge},
		{&ihttp.Error{StatusCode: 429, RetryAfter: 3}, 429, false, StateThrottled},
		{&ihttp.Error{StatusCode: 503}, 503, false, StateServerError},
		{ihttp.NewError(context.DeadlineExceeded), 0, false, StateUnreachable},
		{ihttp.NewError(fmt.Errorf("post: %w", x509.UnknownAuthorityError{})), 0, false, StateTLS},
		{errors.New("anything else"), 0, false, StateBadAnswer},
	}
	for _, c := range cases {
		a := classify(c.err)
		if a.status != c.code || a.reject != c.reject || a.state != c.state {
			t.Errorf("%v: %+v, want status %d reject %v state %s", c.err, a, c.code, c.reject, c.state)
		}
	}
	if a := classify(&ihttp.Error{StatusCode: 429, RetryAfter: 3}); a.retryAfter != 3*time.Second {
		t.Errorf("retry-after %v", a.retryAfter)
	}
}

func TestRunStopsPromptlyDuringRetries(t *testing.T) {
	srv := &fakeServer{failFirst: 1 << 30, failStatus: 503}
	_, sh := shipWith(t, srv, Config{URL: "x", Bucket: "b", MaxBackoff: time.Second}, []record.Record{point(1, "v")})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sh.Run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("Run took %v to stop", d)
	}
}
