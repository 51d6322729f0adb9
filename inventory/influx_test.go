package inventory

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeInflux answers /ping and /api/v2/write as InfluxDB does: 401 for a
// wrong token, 404 for a bucket it does not have.
func fakeInflux(t *testing.T, token, bucket string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ping" && r.Method == http.MethodGet:
			w.Header().Set("X-Influxdb-Version", "1.8.10")
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/api/v2/write" && r.Method == http.MethodPost:
			if r.Header.Get("Authorization") != "Token "+token {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"code":"unauthorized","message":"unauthorized access"}`)
				return
			}
			if r.URL.Query().Get("bucket") != bucket || r.URL.Query().Get("precision") != "ns" {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"error":"database not found: \"`+r.URL.Query().Get("bucket")+`\""}`)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// influxSection is an influx section as the agent's configuration gives it:
// the token read from a file, else from an environment variable.
func influxSection(url, bucket, tokenFile, tokenEnv string) Influx {
	return Influx{URL: url, Bucket: bucket, TokenFile: tokenFile, TokenEnv: tokenEnv, Token: func() (string, error) {
		if tokenFile == "" {
			return os.Getenv(tokenEnv), nil
		}
		b, err := os.ReadFile(tokenFile)
		return strings.TrimSpace(string(b)), err
	}}
}

func TestProbeInflux(t *testing.T) {
	srv := fakeInflux(t, "user:pass", "db/rp")
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("user:pass\n"), 0o600)
	os.WriteFile(bad, []byte("user:wrong\n"), 0o600)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	notInflux := httptest.NewServer(http.NotFoundHandler()) // a web server, not InfluxDB
	defer notInflux.Close()
	for _, c := range []struct {
		name      string
		cfg       Influx
		reachable bool
		ok        bool
		detail    string
	}{
		{"ok", influxSection(srv.URL, "db/rp", good, ""), true, true, ""},
		{"trailing slash", influxSection(srv.URL+"/", "db/rp", good, ""), true, true, ""},
		{"wrong token", influxSection(srv.URL, "db/rp", bad, ""), true, false, "token refused: check influx.token_file (InfluxDB: {\"code\":\"unauthorized\""},
		{"wrong token env", influxSection(srv.URL, "db/rp", "", "MONAGENT_PROBE_TEST_TOKEN"), true, false, "token refused: check influx.token_env ($MONAGENT_PROBE_TEST_TOKEN)"},
		{"no bucket", influxSection(srv.URL, "nodb/rp", good, ""), true, false, `bucket/database not found: create "nodb/rp" or fix influx.bucket and influx.org (InfluxDB: {"error":"database not found`},
		{"unreachable", influxSection(closed.URL, "db/rp", good, ""), false, false, "unreachable: "},
		{"not InfluxDB", influxSection(notInflux.URL, "db/rp", good, ""), true, false, "not InfluxDB: GET /ping answered 404"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := fixtureProbeEnv(t.TempDir())
			env.Influx = &c.cfg
			inv := Probe(context.Background(), env)
			ip := inv.Influx
			if ip == nil || ip.Reachable != c.reachable || ip.WriteOK != c.ok || !strings.HasPrefix(ip.Detail, c.detail) || (c.detail == "") != (ip.Detail == "") {
				t.Fatalf("got %+v, want reachable %v ok %v detail %q", ip, c.reachable, c.ok, c.detail)
			}
			var text bytes.Buffer
			inv.WriteText(&text)
			if !strings.Contains(text.String(), "InfluxDB "+c.cfg.URL) || !strings.Contains(text.String(), c.detail) {
				t.Errorf("text lacks the verdict %q:\n%s", c.detail, text.String())
			}
		})
	}
	if inv := Probe(context.Background(), fixtureProbeEnv(t.TempDir())); inv.Influx != nil {
		t.Errorf("no influx section, yet probed: %+v", inv.Influx)
	}
}

func TestProbeInfluxIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	ip := probeInflux(context.Background(), srv.Client(), Influx{URL: srv.URL, Bucket: "db/rp"})
	if d := time.Since(start); d < 2*time.Second || d > 4*time.Second {
		t.Errorf("a hanging server held the probe %v, want its 2 s limit", d)
	}
	if ip.Reachable || !strings.Contains(ip.Detail, "deadline exceeded") {
		t.Errorf("hanging server probed as %+v", ip)
	}
}
