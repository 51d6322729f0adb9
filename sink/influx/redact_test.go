package influx

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8086":                   "http://127.0.0.1:8086",
		"http://alice:pw@127.0.0.1:8086/x?y=1":    "http://alice:xxxxx@127.0.0.1:8086/x?y=1",
		"https://alice@influx.example":            "https://alice@influx.example",
		"http://alice:p%40ss@h:1":                 "http://alice:xxxxx@h:1",
		"http://alice:pw@127.0.0.1:8086/%zz":      "http://alice:xxxxx@127.0.0.1:8086/%zz", // does not parse
		"http://alice:p w@127.0.0.1:8086":         "http://alice:xxxxx@127.0.0.1:8086",     // does not parse
		"alice:pw@127.0.0.1:8086/%zz":             "alice:xxxxx@127.0.0.1:8086/%zz",
		"http://127.0.0.1:8086/a@b%zz":            "http://127.0.0.1:8086/a@b%zz",
		"http://[::1:8086":                        "http://[::1:8086",
		"http://u:pw@[::1:8086/write?x=a@b":       "http://u:xxxxx@[::1:8086/write?x=a@b",
		"http://alice:pw:more@127.0.0.1:8086/%zz": "http://alice:xxxxx@127.0.0.1:8086/%zz",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Issue 20 item 5: a URL with credentials that reaches the shipper (the
// agent refuses them in its configuration) never shows its password: not in
// a log line, Stats.LastError or the dead-letter file, whether the URL is
// unreachable, refused or quoted back in a server's answer.
func TestCredentialsInURLAreRedacted(t *testing.T) {
	const secret = "s3cr3t-passw0rd"
	var phase atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case phase.Load() == 0:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"code":"unauthorized","message":"unauthorized access"}`)
		case strings.Contains(string(body), "bad"): // a proxy quoting the URL it was given
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"unable to parse 'm bad=\"1\" 2': forwarded by http://alice:%s@%s"}`, secret, r.Host)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	dead := freeAddr(t)

	var out logs
	for _, target := range []string{srv.Listener.Addr().String(), dead} {
		sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		sh, err := New(Config{URL: "http://alice:" + secret + "@" + target, Bucket: "b", Token: "t", Timeout: time.Second,
			BatchInterval: 10 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, HoldBackoff: 5 * time.Millisecond}, sp)
		if err != nil {
			t.Fatal(err)
		}
		sh.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
		sp.Append([]record.Record{point(1, "v"), point(1, "bad"), point(3, "v")})
		if target == dead {
			runUntil(t, sh, func() bool { return sh.Stats().Retries >= 3 })
		} else {
			go func() {
				for sh.Stats().Retries < 3 {
					time.Sleep(time.Millisecond)
				}
				phase.Store(1)
			}()
			runUntil(t, sh, func() bool { return sp.Stats().Acknowledged+sp.Stats().DeadLettered == 3 })
			b, err := os.ReadFile(filepath.Join(sp.Dir(), "deadletter.lp"))
			if err != nil || !strings.Contains(string(b), "forwarded by http://alice:xxxxx@") || strings.Contains(string(b), secret) {
				t.Fatalf("dead-letter file (%v):\n%s", err, b)
			}
		}
		if st := sh.Stats(); strings.Contains(st.LastError, secret) || st.LastError == "" {
			t.Fatalf("LastError %q", st.LastError)
		}
	}
	text := out.String()
	t.Log(text)
	for _, want := range []string{"InfluxDB answered 401", "InfluxDB unreachable at http://alice:xxxxx@" + dead, "url=http://alice:xxxxx@"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(text, secret) {
		t.Fatalf("the password is in the log:\n%s", text)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
