package agent

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/gnss"
	"github.com/monagent/monagent/gnss/gnsstest"
	"github.com/monagent/monagent/record"
)

// gnssSession runs a gnss source whose dials return the connections in
// turn: each gives its lines (read 1 ms apart from sec, each once the ring
// is at most half full), then io.EOF, but the last, which blocks once
// drained. Records are collected as they come.
type gnssSession struct {
	s       *gnssSource
	es      *collect.EventSource[gnssEvent]
	drained chan struct{}
	pace    func()
	cancel  func()
	wg      sync.WaitGroup

	mu   sync.Mutex
	recs []record.Record
}

func startGNSSSession(t *testing.T, c GNSSConfig, log *slog.Logger, conns ...[]string) *gnssSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g := &gnssSession{drained: make(chan struct{}), cancel: cancel}
	dials := 0
	g.s = newGNSSSource(c, log, func(ctx context.Context) (gnssConn, error) {
		lines := conns[dials]
		dials++
		reads := make([]int64, len(lines))
		for i := range reads {
			reads[i] = sec + int64(i)*1e6
		}
		sg := &scriptedGpsd{ctx: ctx, lines: lines, reads: reads, end: io.EOF, pace: g.pace}
		if dials == len(conns) {
			sg.end, sg.drained = nil, g.drained
		}
		return sg, nil
	})
	if err := g.s.judge(judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)}), c); err != nil {
		t.Fatal(err)
	}
	var err error
	if g.es, err = collect.Decode(g.s.name, c.Interval, c.Ring, g.s); err != nil {
		t.Fatal(err)
	}
	ring := g.es.Queue() // each line waits for room: none is lost to the ring
	g.pace = func() {
		for ctx.Err() == nil && ring.Waiting() > c.Ring/2 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	g.es.SetMaxBackoff(time.Millisecond)
	g.wg.Go(func() { g.es.Run(ctx) })
	g.wg.Go(func() {
		for ctx.Err() == nil {
			g.collect()
			time.Sleep(time.Millisecond)
		}
	})
	t.Cleanup(g.stop)
	return g
}

func (g *gnssSession) collect() {
	b := &collect.Batch{Host: "h"}
	g.es.Collect(context.Background(), b)
	g.mu.Lock()
	g.recs = append(g.recs, b.Records...)
	g.mu.Unlock()
}

// wait waits until the last connection is drained, stops the source and
// collects what is left.
func (g *gnssSession) wait(t *testing.T) []record.Record {
	t.Helper()
	select {
	case <-g.drained:
	case <-time.After(2 * time.Minute):
		t.Fatal("the connections were not drained in 2 min")
	}
	g.stop()
	g.collect()
	return g.recs
}

func (g *gnssSession) stop() { g.cancel(); g.wg.Wait() }

// countingLog is a logger whose lines are kept.
func countingLog() (*slog.Logger, *syncBuffer) {
	var buf syncBuffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func gnssSelf(s *gnssSource, name string) int64 {
	n, _ := fieldInt(record.Record{Fields: s.Self()}, name)
	return n
}

// A gpsd that floods ERROR lines (the same text, then texts that differ),
// lines the agent skips, and reconnects with the same VERSION, WATCH and
// DEVICES each time costs a few log lines, not one per message: every
// message is counted.
func TestGNSSErrorFloodIsLoggedByChange(t *testing.T) {
	c := Default().GNSS
	c.Enabled = true
	const conns, floods, varied = 30, 1_000, 10
	var all [][]string
	for i := range conns {
		lines := []string{`{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}`,
			`{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyS0","driver":"u-blox","activated":"2026-11-27T10:00:00.000Z"}]}`,
			`{"class":"WATCH","enable":true,"json":true,"pps":true}`}
		for range floods {
			lines = append(lines, `{"class":"ERROR","message":"`+strings.Repeat("E", 200)+`"}`)
		}
		for j := range varied {
			lines = append(lines, `{"class":"ERROR","message":"unrecognized request 'x`+strconv.Itoa(i*varied+j)+`'"}`)
		}
		lines = append(lines, `garbage`, `{"class":"GST","device":"/dev/ttyS0"}`)
		all = append(all, lines)
	}
	all[conns-1] = append(all[conns-1], `{"class":"TPV","device":"/dev/ttyS0","mode":3}`)
	log, buf := countingLog()
	g := startGNSSSession(t, c, log, all...)
	g.wait(t)
	lines := strings.Count(buf.String(), "\n")
	t.Logf("%d log lines:\n%s", lines, buf.String())
	if lines > 8 {
		t.Errorf("%d log lines for %d connections of %d ERROR lines each; want a few", lines, conns, floods+varied)
	}
	for _, want := range []struct {
		name string
		n    int64
	}{{"gpsd_errors", conns * (floods + varied)}, {"logged_messages", conns * (3 + floods + varied)},
		{"garbage_lines", conns}, {"unknown_classes", conns}, {"connections", conns}} {
		if got := gnssSelf(g.s, want.name); got != want.n {
			t.Errorf("%s %d, want %d", want.name, got, want.n)
		}
	}
}

// The ERROR fault ends, with its count, at the first report a minute after
// the last ERROR; a new ERROR after that is logged again.
func TestGNSSErrorFaultEnds(t *testing.T) {
	c := Default().GNSS
	c.Enabled = true
	log, buf := countingLog()
	s := newGNSSSource(c, log, nil)
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	errLine := gnss.Message{Class: gnss.ClassError, Text: `{"class":"ERROR","message":"E"}`}
	for range 100 {
		s.logMessage(&errLine)
		now = now.Add(time.Second)
	}
	s.report()
	now = now.Add(gnssFaultQuiet)
	s.report()
	s.report()
	s.logMessage(&errLine)
	got := buf.String()
	if n := strings.Count(got, "\n"); n != 3 || !strings.Contains(got, "failures=100") {
		t.Errorf("%d lines, want the start, the end with failures=100 and the start again:\n%s", n, got)
	}
}

// Messages of 200,000 distinct devices (a TPV and a PPS each) keep the
// source's tables at gnss.max_devices: every message beyond is counted
// (over_device_cap) and dropped, no series, judged clock or Referee entry
// is made for it, and the heap stays bounded.
func TestGNSSDevicesBeyondTheCapAreCountedAndDropped(t *testing.T) {
	const n = 200_000
	c := Default().GNSS
	c.Enabled, c.Ring = true, 1024
	var lines []string
	for i := range n {
		dev := "/dev/gps" + strconv.Itoa(i)
		lines = append(lines, `{"class":"TPV","device":"`+dev+`","mode":3}`,
			`{"class":"PPS","device":"`+dev+`","real_sec":1700000001,"real_nsec":0,"clock_sec":1700000001,"clock_nsec":1000}`)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g := startGNSSSession(t, c, quietLog(), lines)
	lines = nil
	recs := g.wait(t)
	devices := map[string]bool{}
	for _, r := range recs {
		if r.Measurement == "gnss" {
			devices[tagOf(r, "device")] = true
		}
	}
	g.recs, recs = nil, nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap %+d KiB; %d devices recorded", grown>>10, len(devices))
	if len(devices) > c.MaxDevices {
		t.Errorf("%d devices recorded, want at most %d", len(devices), c.MaxDevices)
	}
	if dropped, want := gnssSelf(g.s, "over_device_cap"), int64(2*(n-c.MaxDevices)); dropped != want || g.es.Queue().RingDropped() != 0 {
		t.Errorf("over_device_cap %d, want %d; ring dropped %d, want 0", dropped, want, g.es.Queue().RingDropped())
	}
	if len(g.s.devices) > c.MaxDevices || g.s.admitted.Len() > c.MaxDevices {
		t.Errorf("the source keeps %d devices (%d admitted), want at most %d", len(g.s.devices), g.s.admitted.Len(), c.MaxDevices)
	}
	if grown > 16<<20 {
		t.Errorf("the heap grew by %d MiB over %d devices", grown>>20, n)
	}
	runtime.KeepAlive(g)
}

// Two receivers, one with a 3D fix and one without: each is a reference of
// its own (source gnss:<address>:<device>). The one with the fix locks
// after min_samples edges; the other's edges, interleaved, reset nothing
// of it (on main they did: the clock never locked).
func TestGNSSReceiversAreJudgedApart(t *testing.T) {
	c := Default().GNSS
	c.Enabled = true
	var lines []string
	var reads []int64
	add := func(line string, read int64) { lines, reads = append(lines, line), append(reads, read) }
	for i := range int64(8) {
		real := sec + (i+1)*1e9
		add(`{"class":"TPV","device":"/dev/good","mode":3}`, real-200e6)
		add(`{"class":"TPV","device":"/dev/nofix","mode":1}`, real-200e6)
		add(strings.ReplaceAll(ppsLine(real, real+2_000), "/dev/ttyS0", "/dev/good"), real+50_000)
		add(strings.ReplaceAll(ppsLine(real, real+3_000), "/dev/ttyS0", "/dev/nofix"), real+60_000)
	}
	_, recs := runGNSS(t, c, lines, reads)
	locked := map[string]int{}
	for _, r := range recs {
		if to, _ := r.Field("to"); r.Measurement == "sync_state" && to.S == "LOCKED" {
			locked[tagOf(r, "source")]++
		}
	}
	good, nofix := "gnss:"+c.Address+":/dev/good", "gnss:"+c.Address+":/dev/nofix"
	if locked[good] != 1 || locked[nofix] != 0 || len(locked) != 1 {
		t.Errorf("LOCKED transitions by source %v; want one of %s and none of %s", locked, good, nofix)
	}
}

// A gpsd that accepts, sends VERSION and then nothing (TCP open) is dialled
// again after gnss.read_timeout, each time counted in read_timeouts and
// connections; its VERSION is logged once, not once a connection.
func TestGNSSRedialsAHungGpsd(t *testing.T) {
	addr := gnsstest.Hung(t, 0, `{"class":"VERSION","release":"3.22"}`)
	c := Default().GNSS
	c.Enabled, c.Address, c.ReadTimeout = true, addr, 200*time.Millisecond
	log, buf := countingLog()
	s := newGNSSSource(c, log, nil)
	es, err := collect.Decode(s.name, c.Interval, c.Ring, s)
	if err != nil {
		t.Fatal(err)
	}
	es.SetMaxBackoff(10 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { es.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, "three connections to the hung gpsd", func() bool { return gnssSelf(s, "connections") >= 3 })
	if n := gnssSelf(s, "read_timeouts"); n < 2 {
		t.Errorf("read_timeouts %d after %d connections, want each but the last timed out", n, gnssSelf(s, "connections"))
	}
	cancel()
	wg.Wait()
	if n := strings.Count(buf.String(), "gpsd VERSION"); n != 1 {
		t.Errorf("VERSION logged %d times, want once:\n%s", n, buf.String())
	}
}
