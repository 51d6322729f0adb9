package influx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// TestFixableServerFaults is issue 10's "done means" fault test: in front of
// the testbed's real influxd, a proxy the test controls answers 401 for a
// while, then 404 "database not found" until the test creates the database
// through influxd's /query, then passes through. Points are written all along;
// every one arrives, none is dead-lettered, and the log names each cause once
// per state change.
func TestFixableServerFaults(t *testing.T) {
	const fdb = "faultdb"
	in := testbed.StartInfluxd(t, "")
	target, _ := url.Parse(in.URL)
	pass := httputil.NewSingleHostReverseProxy(target)
	var phase atomic.Int32 // 0: 401, 1: 404, 2: pass through
	var answered [3]atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := phase.Load()
		answered[p].Add(1)
		switch p {
		case 0:
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"code":"unauthorized","message":"unauthorized access"}`)
		case 1:
			io.Copy(io.Discard, r.Body)
			msg := fmt.Sprintf("database not found: %q", fdb)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Influxdb-Error", msg)
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":%q}`, msg)
		default:
			pass.ServeHTTP(w, r)
		}
	}))
	defer proxy.Close()

	dir := t.TempDir()
	sp, err := spool.Open(spool.Options{Dir: dir, FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var logged logs
	sh, err := New(Config{URL: proxy.URL, Bucket: fdb + "/autogen", Token: "user:pass", Timeout: 5 * time.Second,
		BatchInterval: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, HoldBackoff: 200 * time.Millisecond}, sp)
	if err != nil {
		t.Fatal(err)
	}
	sh.SetLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sh.Run(ctx) }()

	var next int64
	write := func(d time.Duration) { // 1000 points/s in 10 ms steps
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			recs := make([]record.Record, 10)
			for k := range recs {
				recs[k] = seqRecord(next, "fault")
				next++
			}
			if err := sp.Append(recs); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(1500 * time.Millisecond)
	if st := sh.Stats(); st.State != StateUnauthorized || st.LastStatus != 401 || st.OutageStartNS == 0 {
		t.Fatalf("during the 401 phase: %+v", st)
	}
	phase.Store(1)
	write(1500 * time.Millisecond)
	if st := sh.Stats(); st.State != StateNotFound || st.LastStatus != 404 {
		t.Fatalf("during the 404 phase: %+v", st)
	}
	in.Query("", "CREATE DATABASE "+fdb)
	phase.Store(2)
	write(time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for sp.Stats().Acknowledged < uint64(next) {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered in 30 s: spool %+v, shipper %+v", sp.Stats(), sh.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	res := in.Query(fdb, `SELECT COUNT("seq") FROM "load" WHERE "run"='fault'`)
	var n int64
	if len(res.Results) > 0 && len(res.Results[0].Series) > 0 {
		n, _ = res.Results[0].Series[0].Values[0][1].Int64()
	}
	st, shst := sp.Stats(), sh.Stats()
	text := logged.String()
	t.Logf("%d points written, %d in influxd; proxy answered %d x 401, %d x 404, passed %d; shipper %+v\n%s",
		next, n, answered[0].Load(), answered[1].Load(), answered[2].Load(), shst, text)
	if n != next || st.DeadLettered != 0 || shst.DeadLettered != 0 {
		t.Fatalf("influxd holds %d of %d points; spool %+v", n, next, st)
	}
	if _, err := os.Stat(filepath.Join(dir, "deadletter.lp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dead-letter file: %v", err)
	}
	if answered[0].Load() < 2 || answered[1].Load() < 2 {
		t.Fatalf("the faults were not exercised: %d x 401, %d x 404", answered[0].Load(), answered[1].Load())
	}
	for _, want := range []string{
		"InfluxDB answered 401 Unauthorized: check influx.token_file / influx.token_env",
		"database/bucket not found: create it or fix influx.bucket",
		"InfluxDB reachable again after",
	} {
		if c := strings.Count(text, want); c != 1 {
			t.Errorf("%q logged %d times, want once", want, c)
		}
	}
	if c := strings.Count(text, "\n"); c != 3 {
		t.Errorf("%d log lines, want 3 (one per state change)", c)
	}
	if shst.State != StateOK || shst.OutageStartNS != 0 {
		t.Errorf("after recovery: %+v", shst)
	}
}
