package influx

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// TestV2WriteRequestShape pins what InfluxDB 2.x and 3.x expect of a write (the
// same /api/v2/write that 1.8 serves and the integration tests use for real):
// org and bucket parameters, ns precision, "Token" authorisation, gzip bodies.
// It also checks that the token appears in no error or counter.
func TestV2WriteRequestShape(t *testing.T) {
	const token = "s3cr3t-token-value"
	var mu sync.Mutex
	var got *http.Request
	var body string
	fail := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = r.Clone(context.Background())
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			rd = zr
		}
		b, _ := io.ReadAll(rd)
		body = string(b)
		if fail { // first answer: a retryable 503
			fail = false
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"code":"unavailable","message":"warming up"}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sh, err := New(Config{URL: srv.URL, Org: "machine-room", Bucket: "monagent", Token: token, Gzip: true,
		BatchInterval: 10 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, sp)
	if err != nil {
		t.Fatal(err)
	}
	sp.Append(recsN(3))
	runUntil(t, sh, func() bool { return sp.Stats().Acknowledged == 3 })
	mu.Lock()
	defer mu.Unlock()
	q := got.URL.Query()
	if got.Method != http.MethodPost || got.URL.Path != "/api/v2/write" || q.Get("org") != "machine-room" || q.Get("bucket") != "monagent" || q.Get("precision") != "ns" {
		t.Fatalf("request %s %s", got.Method, got.URL)
	}
	if got.Header.Get("Authorization") != "Token "+token || got.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("headers %v", got.Header)
	}
	if !strings.Contains(body, "m v=\"0\" 1\n") || strings.Count(body, "\n") < 3 {
		t.Fatalf("body %q", body)
	}
	st := sh.Stats()
	if st.Retries != 1 || strings.Contains(st.LastError, token) || st.LastError == "" {
		t.Fatalf("stats %+v", st)
	}
}

func recsN(n int) (out []record.Record) {
	for i := 0; i < n; i++ {
		out = append(out, point(i, "v"))
	}
	return out
}
