package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/report"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

// hostStats are one host's statistics, computed as its points are made.
type hostStats struct {
	n          int64
	mean, m2   float64 // Welford
	minV, maxV int64
}

func (h *hostStats) add(v int64) {
	if h.n == 0 || v < h.minV {
		h.minV = v
	}
	if h.n == 0 || v > h.maxV {
		h.maxV = v
	}
	h.n++
	d := float64(v) - h.mean
	h.mean += d / float64(h.n)
	h.m2 += d * (float64(v) - h.mean)
}

func (h *hostStats) std() float64 { return math.Sqrt(h.m2 / float64(h.n-1)) }

// fleet is boards × seconds of clock_offset at 1 Hz, tagged fleet=name.
type fleet struct {
	name           string
	boards, secs   int
	t0             int64 // the first second, ns
	hosts          map[string]*hostStats
	wrote, shipped time.Duration
}

func (f *fleet) host(b int) string { return fmt.Sprintf("%s%03d", f.name, b) }

// offset is board b's offset at second s: a bias per board (one board 50 µs
// off) and noise.
func offset(rng *rand.Rand, b int) int64 {
	bias := int64(b%10-5) * 1000
	if b == 7 {
		bias = 50_000
	}
	return bias + int64(math.Round(rng.NormFloat64()*200))
}

// shipFleet writes f's points through the agent's shipper: appended to a
// spool (gzip'd entries, as the agent's) that an influx.Shipper ships to the
// influxd at url, database db; it returns when influxd has acknowledged them
// all. With lp set, the same records are written there as line protocol.
func shipFleet(t *testing.T, url, db string, f *fleet, lp *bufio.Writer) {
	t.Helper()
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), MaxBytes: 1 << 40, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sh, err := influx.New(influx.Config{URL: url, Bucket: db + "/autogen", Token: "user:pass", BatchPoints: 10000,
		BatchInterval: 50 * time.Millisecond, Timeout: 60 * time.Second}, sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sh.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("shipper: %v", err)
		}
	}()
	f.hosts = map[string]*hostStats{}
	rngs := make([]*rand.Rand, f.boards)
	for b := range rngs {
		rngs[b] = rand.New(rand.NewPCG(uint64(b), 38))
		f.hosts[f.host(b)] = &hostStats{}
	}
	start := time.Now()
	batch := make([]record.Record, 0, 10000)
	var enc record.Encoder
	var buf []byte
	total := uint64(f.boards * f.secs)
	flush := func() {
		if err := sp.Append(batch); err != nil {
			t.Fatal(err)
		}
		if lp != nil {
			buf, _, _ = enc.Append(buf[:0], batch)
			lp.Write(buf)
		}
		batch = batch[:0]
		// Pace the appends to the shipper: a backlog of at most 1 M points.
		for st := sp.Stats(); st.Appended > st.Acknowledged+1_000_000; st = sp.Stats() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for s := 0; s < f.secs; s++ {
		for b := 0; b < f.boards; b++ {
			v := offset(rngs[b], b)
			f.hosts[f.host(b)].add(v)
			batch = append(batch, record.Record{Measurement: "clock_offset",
				Tags:   []record.Tag{{Key: "clock", Value: "realtime"}, {Key: "fleet", Value: f.name}, {Key: "host", Value: f.host(b)}, {Key: "ref", Value: "monotonic_raw"}},
				Fields: []record.Field{record.Int("offset_ns", v)}, TimeNS: f.t0 + int64(s)*1e9})
			if len(batch) == cap(batch) {
				flush()
			}
		}
	}
	flush()
	f.wrote = time.Since(start)
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		st := sp.Stats()
		if st.DroppedBuffer+st.DroppedCap+st.DroppedDisk+st.DeadLettered+st.Rejected > 0 {
			t.Fatalf("points lost on the way to influxd: %+v", st)
		}
		if st.Acknowledged == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("influxd acknowledged %d of %d points in 30 min", st.Acknowledged, total)
		}
	}
	f.shipped = time.Since(start)
}

// reportResult is what the test reads of the report's JSON.
type reportResult struct {
	Series map[string]string `json:"series"`
	N      int64             `json:"n"`
	Mean   float64           `json:"mean_ns"`
	Std    float64           `json:"std_ns"`
	Min    int64             `json:"min_ns"`
	Max    int64             `json:"max_ns"`
}

// checkPerHost compares the report's JSON with the statistics of the points
// written: every host once, its count, mean, σ, minimum and maximum.
func checkPerHost(t *testing.T, f *fleet, js []byte) {
	t.Helper()
	var rs []reportResult
	if err := json.Unmarshal(js, &rs); err != nil {
		t.Fatalf("report JSON: %v\n%.300s", err, js)
	}
	if len(rs) != f.boards {
		t.Fatalf("report of fleet %s: %d series, want one per host, %d", f.name, len(rs), f.boards)
	}
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1) }
	for _, r := range rs {
		h := f.hosts[r.Series["host"]]
		if h == nil || len(r.Series) != 1 {
			t.Fatalf("series %v: not one host of the fleet", r.Series)
		}
		if r.N != h.n || r.Min != h.minV || r.Max != h.maxV || rel(r.Mean, h.mean) > 1e-9 || rel(r.Std, h.std()) > 1e-9 {
			t.Errorf("host %s: report n %d mean %g σ %g min %d max %d; the points written: n %d mean %g σ %g min %d max %d",
				r.Series["host"], r.N, r.Mean, r.Std, r.Min, r.Max, h.n, h.mean, h.std(), h.minV, h.maxV)
		}
	}
}

// peakHeap runs fn while sampling the heap's objects every half millisecond
// under GOGC=10 (so that garbage does not hide what is held), and returns
// the largest sample above the heap before fn.
func peakHeap(fn func()) (peak uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(500 * time.Microsecond):
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	return peak - min(peak, base)
}

// Issue 38 item 6: 'report --input' an InfluxDB holding a fleet, written
// through the agent's shipper into a real influxd 1.8, gives each host's
// statistics in one call, equal to those of the points written and to the
// report of the same points as a file, and it holds a batch of hosts'
// points at a time (2^18 points: 36 of these hosts): its peak heap does not
// grow with the number of boards (40 and 100 boards × 2 h at 1 Hz, 288,000
// and 720,000 points; both fill a batch). The full size, 100 boards × 1 day,
// is TestFleetReportFullSize.
func TestFleetReportPerHost(t *testing.T) {
	in := testbed.StartInfluxd(t, "fleet")
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UnixNano()
	dir := t.TempDir()
	lpFile, err := os.Create(filepath.Join(dir, "small.lp"))
	if err != nil {
		t.Fatal(err)
	}
	lp := bufio.NewWriter(lpFile)
	small := &fleet{name: "a", boards: 40, secs: 7200, t0: t0}
	big := &fleet{name: "b", boards: 100, secs: 7200, t0: t0}
	shipFleet(t, in.URL, "fleet", small, lp)
	lp.Flush()
	lpFile.Close()
	shipFleet(t, in.URL, "fleet", big, nil)

	rep := func(f *fleet, input string) ([]byte, uint64) {
		q := report.Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"host"}, Where: []report.Tag{{Key: "fleet", Value: f.name}},
			Start: f.t0, Stop: f.t0 + int64(f.secs)*1e9}
		// The report goes to a file, not into the heap measured.
		out, err := os.Create(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		var errw bytes.Buffer
		peak := peakHeap(func() {
			err = report.Run(context.Background(), report.Input{Paths: []string{input}, Influx: report.Influx{Bucket: "fleet/autogen"}},
				q, report.RunOptions{Format: "json"}, out, &errw)
		})
		if err != nil {
			t.Fatalf("report of fleet %s from %s: %v\n%s", f.name, input, err, errw.String())
		}
		js, err := os.ReadFile(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		return js, peak
	}
	fromInflux, peakSmall := rep(small, in.URL)
	checkPerHost(t, small, fromInflux)
	if fromFile, _ := rep(small, lpFile.Name()); !bytes.Equal(fromInflux, fromFile) {
		t.Errorf("the report from influxd differs from the report of the points written:\n%.2000s\n---\n%.2000s", fromInflux, fromFile)
	}
	smallJSON := len(fromInflux)
	fromInflux, peakBig := rep(big, in.URL)
	checkPerHost(t, big, fromInflux)
	// Held whole, the 432,000 more points of the big fleet take 16 bytes
	// each at least (time and value): 6.9 MB more. A batch at a time, the
	// peak grows by the results only, which the report's JSON measures
	// (the encoder holds it twice, marshalled and indented, in buffers
	// grown by doubling), and noise.
	grew := int64(peakBig) - int64(peakSmall)
	held := int64(big.boards*big.secs-small.boards*small.secs) * 16
	results := 3 * int64(len(fromInflux)-smallJSON)
	t.Logf("peak heap above the start: %d boards %.2f MB, %d boards %.2f MB (%+.2f MB; the JSON %+.2f MB)", small.boards, float64(peakSmall)/1e6,
		big.boards, float64(peakBig)/1e6, float64(grew)/1e6, float64(len(fromInflux)-smallJSON)/1e6)
	if grew > held/4+results {
		t.Errorf("the report's peak heap grew by %.2f MB from %d to %d boards, more than 3 × its JSON's growth and a quarter of the %.2f MB the added points take: it holds the points",
			float64(grew)/1e6, small.boards, big.boards, float64(held)/1e6)
	}
}

// TestFleetReportFullSize (opt-in: MONAGENT_BENCH_FLEET_REPORT=1) writes
// 100 boards × 1 day at 1 Hz, 8.64 M points, through the shipper into influxd
// 1.8 and runs 'monagent report --group-by host' on it as a user would,
// measuring its time, peak RSS and CPU. MONAGENT_BENCH_FLEET_SECS makes the
// day shorter on a machine that cannot take it.
func TestFleetReportFullSize(t *testing.T) {
	if os.Getenv("MONAGENT_BENCH_FLEET_REPORT") != "1" {
		t.Skip("the full-size fleet report (8.64 M points, minutes of 2 cores) runs with MONAGENT_BENCH_FLEET_REPORT=1")
	}
	secs := 86400
	if s, err := strconv.Atoi(os.Getenv("MONAGENT_BENCH_FLEET_SECS")); err == nil && s > 0 {
		secs = s
	}
	in := testbed.StartInfluxd(t, "fleet")
	f := &fleet{name: "full", boards: 100, secs: secs, t0: time.Now().Add(-time.Duration(secs+600) * time.Second).Truncate(time.Second).UnixNano()}
	shipFleet(t, in.URL, "fleet", f, nil)
	t.Logf("%d points appended in %s, all acknowledged by influxd after %s (%.0f points/s)",
		f.boards*f.secs, f.wrote.Round(time.Millisecond), f.shipped.Round(time.Millisecond), float64(f.boards*f.secs)/f.shipped.Seconds())
	rfc := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }
	cmd := command("report", "--input", in.URL, "--bucket", "fleet/autogen", "--measurement", "clock_offset", "--field", "offset_ns",
		"--group-by", "host", "--where", "fleet=full", "--start", rfc(f.t0), "--stop", rfc(f.t0+int64(f.secs)*1e9), "--format", "json")
	var out, errw bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hwm := peakRSS(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("report: %v\n%s", err, errw.String())
	}
	wall := time.Since(start)
	rss := <-hwm
	// The rusage's CPU is the report's; its ru_maxrss is not (a child
	// started with CLONE_VM inherits the test's high-water mark at exec).
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	t.Logf("monagent report --group-by host over %d points: %s wall, %s CPU (user %s, sys %s), peak RSS %.1f MiB\n%s",
		f.boards*f.secs, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), time.Duration(ru.Utime.Nano()).Round(time.Millisecond),
		time.Duration(ru.Stime.Nano()).Round(time.Millisecond), float64(rss)/(1<<20), lastLine(errw.String()))
	checkPerHost(t, f, out.Bytes())
	if rss > 300<<20 {
		t.Errorf("peak RSS %.1f MiB, goal < 300 MB", float64(rss)/(1<<20))
	}
}

// peakRSS polls the VmHWM (peak resident set since exec) of process pid
// every 20 ms until it ends, and sends the last value read, in bytes.
func peakRSS(pid int) <-chan int64 {
	c := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			_, v, ok := strings.Cut(string(b), "VmHWM:")
			if err != nil || !ok { // ended (a zombie has no Vm lines)
				c <- peak
				return
			}
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.SplitN(v, "\n", 2)[0], "kB")), 10, 64)
			peak = max(peak, kb<<10)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return c
}

// lastLine is the last line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
