package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// InfluxdVersion is the influxd the tests run. 1.8 serves the v2 write API
// (bucket "db/rp", token "user:pass").
const InfluxdVersion = "v1.8.10"

// CacheDir is where test peers are built and kept between runs:
// $MONAGENT_CACHE, else the user cache directory's monagent folder.
func CacheDir() string {
	if d := os.Getenv("MONAGENT_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "monagent")
}

var buildMu sync.Mutex

// InfluxdBinary returns the path of influxd, building it with go install on first
// use (a file lock keeps parallel test binaries from building it twice).
func InfluxdBinary(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(CacheDir(), "influxd-"+InfluxdVersion)
	bin := filepath.Join(dir, "influxd")
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err == nil {
		return bin // another process built it while we waited
	}
	t.Logf("building influxd %s into %s (once)", InfluxdVersion, dir)
	cmd := exec.Command("go", "install", "github.com/influxdata/influxdb/cmd/influxd@"+InfluxdVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOOS=", "GOARCH=", "GOARM=", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install influxd: %v\n%s", err, out)
	}
	return bin
}

// Influxd is a running influxd on loopback with a temporary data directory.
type Influxd struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	d    daemon
	// URL is the HTTP API, e.g. http://127.0.0.1:40123.
	URL string
}

// StartInfluxd starts influxd and creates database db; it is stopped and its data
// removed when the test ends.
func StartInfluxd(t testing.TB, db string) *Influxd {
	t.Helper()
	return StartInfluxdWith(t, db, InfluxdOptions{})
}

// InfluxdOptions are the influxd settings a test may change.
type InfluxdOptions struct {
	MaxBodySize int // [http] max-body-size in bytes: larger writes get 413 (0: no limit)
}

// StartInfluxdWith is StartInfluxd with options.
func StartInfluxdWith(t testing.TB, db string, o InfluxdOptions) *Influxd {
	t.Helper()
	i := &Influxd{t: t, bin: InfluxdBinary(t), dir: t.TempDir(), port: FreePort(t)}
	i.URL = fmt.Sprintf("http://127.0.0.1:%d", i.port)
	i.d = daemon{name: "influxd", log: filepath.Join(i.dir, "influxd.log")}
	conf := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = %q
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
  wal-fsync-delay = "0s"
[http]
  bind-address = "127.0.0.1:%d"
  flux-enabled = true
  log-enabled = false
  auth-enabled = false
  max-body-size = %d
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[logging]
  level = "warn"
`, FreePort(t), filepath.Join(i.dir, "meta"), filepath.Join(i.dir, "data"), filepath.Join(i.dir, "wal"), i.port, o.MaxBodySize)
	if err := os.WriteFile(filepath.Join(i.dir, "influxd.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	i.Start()
	t.Cleanup(i.Stop)
	if db != "" {
		i.Query("", "CREATE DATABASE "+db)
	}
	return i
}

// Start (re)starts influxd on the same port and data directory.
func (i *Influxd) Start() {
	i.t.Helper()
	if i.d.running() {
		i.t.Fatal("influxd already running")
	}
	cmd := exec.Command(i.bin, "run", "-config", filepath.Join(i.dir, "influxd.conf"))
	i.d.start(i.t, cmd, i.pong, 30*time.Second, 50*time.Millisecond, "influxd did not answer /ping within 30 s")
}

// pong reports whether influxd answers /ping.
func (i *Influxd) pong() bool {
	resp, err := http.Get(i.URL + "/ping")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusNoContent
}

// Stop stops influxd (SIGTERM, then SIGKILL after 10 s). Data stays for Start.
func (i *Influxd) Stop() { i.d.stop(10 * time.Second) }

// Addr is host:port of the HTTP API.
func (i *Influxd) Addr() string { return fmt.Sprintf("127.0.0.1:%d", i.port) }

// QueryResult is InfluxQL's JSON answer.
type QueryResult struct {
	Results []QueryStatement `json:"results"`
	Error   string           `json:"error"`
}

// QueryStatement is the answer to one statement of a query.
type QueryStatement struct {
	Series []QuerySeries `json:"series"`
	Error  string        `json:"error"`
}

// QuerySeries is one series of a statement's answer.
type QuerySeries struct {
	Name    string            `json:"name"`
	Tags    map[string]string `json:"tags"`
	Columns []string          `json:"columns"`
	Values  [][]json.Number   `json:"values"`
}

// Query runs InfluxQL against db and fails the test on an error.
func (i *Influxd) Query(db, q string) QueryResult {
	i.t.Helper()
	form := url.Values{"q": {q}, "epoch": {"ns"}}
	if db != "" {
		form.Set("db", db)
	}
	resp, err := http.PostForm(i.URL+"/query", form)
	if err != nil {
		i.t.Fatalf("influxql %q: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r QueryResult
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		i.t.Fatalf("influxql %q: %v: %s", q, err, body)
	}
	if r.Error != "" || (len(r.Results) > 0 && r.Results[0].Error != "") {
		i.t.Fatalf("influxql %q: %s", q, body)
	}
	return r
}

// Write posts line protocol to the v2 write API of bucket (db/rp) with the
// test token, and returns influxd's status and answer; a request that does
// not reach it fails the test.
func (i *Influxd) Write(bucket, lines string) (int, string) {
	i.t.Helper()
	req, err := http.NewRequest(http.MethodPost, i.URL+"/api/v2/write?bucket="+url.QueryEscape(bucket)+"&precision=ns", strings.NewReader(lines))
	if err != nil {
		i.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Token user:pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		i.t.Fatalf("write to %s: %v", bucket, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Count returns SELECT COUNT(field) FROM measurement in db (0 when empty).
func (i *Influxd) Count(db, measurement, field string) int64 {
	i.t.Helper()
	r := i.Query(db, fmt.Sprintf("SELECT COUNT(%q) FROM %q", field, measurement))
	if len(r.Results) == 0 || len(r.Results[0].Series) == 0 {
		return 0
	}
	n, _ := r.Results[0].Series[0].Values[0][1].Int64()
	return n
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
