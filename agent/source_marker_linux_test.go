package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/marker"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// markerSeries is what a marker series holds as a map key (measured
// against its memory budget in config_memory_linux_test.go).
type markerSeries = marker.Series

// markerFixture is a marker source on a socket in a temporary directory,
// its event source running.
type markerFixture struct {
	t    *testing.T
	path string
	d    *markerSource
	s    *collect.EventSource[markerEvent]
	raw  *net.UnixConn
}

func newMarkerFixture(t *testing.T, tr *timebase.Translators, maxSeries int) *markerFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.sock")
	d, err := newMarkerSource(path, 0o660, maxSeries, tr, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s, err := collect.Decode("marker", time.Second, 64, d)
	if err != nil {
		t.Fatal(err)
	}
	stop := collecttest.Start(s)
	raw, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw.Close()
		stop()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket file is still there after Close: %v", err)
		}
	})
	return &markerFixture{t: t, path: path, d: d, s: s, raw: raw}
}

// send writes raw datagrams and waits until the reader has taken them
// (queued, or counted malformed).
func (f *markerFixture) send(lines ...string) {
	f.t.Helper()
	want := f.s.Queue().Received() + f.d.r.Malformed() + uint64(len(lines))
	for _, l := range lines {
		if _, err := f.raw.Write([]byte(l)); err != nil {
			f.t.Fatal(err)
		}
	}
	f.wait(want)
}

func (f *markerFixture) wait(want uint64) {
	f.t.Helper()
	waitReceived(f.t, func() uint64 { return f.s.Queue().Received() + f.d.r.Malformed() }, want)
}

func intField(t *testing.T, r record.Record, key string) int64 {
	t.Helper()
	f, ok := r.Field(key)
	if !ok {
		t.Fatalf("%s: no field %s in %+v", r.Tag("name"), key, r.Fields)
	}
	return f.I
}

func TestMarkerSourceShipsEachMarkerAtItsTime(t *testing.T) {
	f := newMarkerFixture(t, fakeModels(false), 100)

	// The Go client, with a MONOTONIC stamp: moved to REALTIME by the
	// models (monotonic = raw + 1000 ns, REALTIME = raw + epoch).
	c, err := marker.Dial(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := marker.Marker{Name: "phase", HasValue: true, Value: 3.5, Clock: marker.ClockMonotonic, StampNS: 5e9}
	m.AddTag("rank", "0")
	want := f.s.Queue().Received() + 1
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	f.wait(want)

	before, _ := timebase.Realtime.Now()
	f.send(
		"deploy rt=1700000000123456789 version=v1.2\n",
		"bare",
		"bad!name",
		"x value=abc",
		"dup rt=1700000000000000000",
		"dup rt=1700000000000000000 value=2",
		"y "+strings.Repeat("k", 600),
	)
	after, _ := timebase.Realtime.Now()

	recs := collectAll(t, f.s)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Measurement != "marker" || r.Tag("host") != "h" || r.Tag("name") == "" {
			t.Fatalf("record %+v", r)
		}
	}

	r := recs[0]
	if wantT := int64(5e9) - 1000 + epoch; r.TimeNS < wantT-2 || r.TimeNS > wantT+2 {
		t.Errorf("phase at %d, want %d (mono 5 s moved to REALTIME)", r.TimeNS, wantT)
	}
	if v, _ := r.Field("value"); v.F != 3.5 || r.Tag("rank") != "0" || r.Tag("name") != "phase" {
		t.Errorf("phase %+v", r)
	}
	if u := intField(t, r, "uncertainty_ns"); u < 0 || u > 1000 {
		t.Errorf("uncertainty_ns %d", u)
	}
	if intField(t, r, "sender_ns") != 5e9 {
		t.Errorf("sender_ns %d", intField(t, r, "sender_ns"))
	}
	if sc, _ := r.Field("sender_clock"); sc.S != "monotonic" {
		t.Errorf("sender_clock %q", sc.S)
	}
	if a := intField(t, r, "arrival_ns"); a > before {
		t.Errorf("arrival %d after the next send began (%d)", a, before)
	}

	r = recs[1]
	if r.TimeNS != 1700000000123456789 || r.Tag("version") != "v1.2" {
		t.Errorf("deploy %+v", r)
	}
	if sc, _ := r.Field("sender_clock"); sc.S != "realtime" {
		t.Errorf("deploy sender_clock %q", sc.S)
	}
	if _, ok := r.Field("uncertainty_ns"); ok {
		t.Error("a REALTIME stamp has no move, hence no uncertainty")
	}

	r = recs[2]
	if r.TimeNS < before || r.TimeNS > after || intField(t, r, "arrival_ns") != r.TimeNS {
		t.Errorf("bare at %d, want its arrival within [%d, %d]", r.TimeNS, before, after)
	}
	for _, k := range []string{"value", "sender_ns", "sender_clock", "uncertainty_ns"} {
		if _, ok := r.Field(k); ok {
			t.Errorf("bare has %s", k)
		}
	}

	if recs[3].TimeNS != 1700000000000000000 || recs[4].TimeNS != 1700000000000000001 {
		t.Errorf("dup times %d, %d: the second should be 1 ns later", recs[3].TimeNS, recs[4].TimeNS)
	}
	if intField(t, recs[4], "sender_ns") != 1700000000000000000 {
		t.Error("sender_ns must keep the sender's stamp")
	}

	for k, want := range map[string]uint64{"events": 5, "events_collected": 5, "markers": 5, "malformed": 3,
		"time_bumps": 1, "series": 4, "series_dropped": 0, "untranslated": 0, "ring_dropped": 0} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("self %s = %d, want %d", k, got, want)
		}
	}
	if got := collecttest.Self(t, f.s, "kernel_stamped").U + collecttest.Self(t, f.s, "read_stamped").U; got != 8 {
		t.Errorf("kernel_stamped + read_stamped = %d, want 8 datagrams", got)
	}
	if e := collecttest.Self(t, f.s, "malformed_last_error").S; !strings.Contains(e, "line") || !strings.Contains(e, "512") {
		t.Errorf("malformed_last_error %q", e)
	}
	if f.d.r.Stamps() != "" && collecttest.Self(t, f.s, "kernel_stamped").U != 8 {
		t.Errorf("%s is on but %d of 8 datagrams had the kernel's stamp", f.d.r.Stamps(), collecttest.Self(t, f.s, "kernel_stamped").U)
	}
	t.Logf("kernel stamps: %q; kernel_stamped %d, read_stamped %d", f.d.r.Stamps(),
		collecttest.Self(t, f.s, "kernel_stamped").U, collecttest.Self(t, f.s, "read_stamped").U)
}

// Without a MONOTONIC model, a monotonic stamp cannot be moved: the marker
// ships at its arrival, counted untranslated, keeping the sender's stamp.
func TestMarkerSourceUntranslated(t *testing.T) {
	f := newMarkerFixture(t, timebase.NewTranslators(), 100)
	before, _ := timebase.Realtime.Now()
	f.send("m mono=123")
	after, _ := timebase.Realtime.Now()
	recs := collectAll(t, f.s)
	if len(recs) != 1 || recs[0].TimeNS < before || recs[0].TimeNS > after {
		t.Fatalf("records %+v, want one at its arrival", recs)
	}
	if _, ok := recs[0].Field("uncertainty_ns"); ok || intField(t, recs[0], "sender_ns") != 123 {
		t.Errorf("fields %+v", recs[0].Fields)
	}
	if collecttest.Self(t, f.s, "untranslated").U != 1 {
		t.Error("untranslated not counted")
	}
}

// seriesKey is a record's InfluxDB key: measurement, tags and time.
func seriesKey(r record.Record) string {
	var k []string
	for _, tg := range r.Tags {
		k = append(k, tg.Key+"="+tg.Value)
	}
	slices.Sort(k)
	return fmt.Sprintf("%s,%s %d", r.Measurement, strings.Join(k, ","), r.TimeNS)
}

// A marker's time is guarded within its series (name and tags): it moves
// only when a marker of that series already has the time, also one before
// the last, and never when it collides with nothing (before, the guard was
// keyed by name and looked at the last marker only: rank=1 500 ns before
// rank=0 moved 501 ns, and a repeat of an earlier time shipped on it).
func TestMarkerSourceGuardsEachSeries(t *testing.T) {
	f := newMarkerFixture(t, timebase.NewTranslators(), 100)
	const t0 = int64(1_700_000_000_000_000_000)
	line := func(rank int, ns int64) string { return fmt.Sprintf("step rt=%d rank=%d", ns, rank) }
	f.send(
		line(0, t0),
		line(1, t0-500), // before rank 0's, another series: kept
		line(1, t0),     // rank 0 has t0, rank 1 not: kept
		line(0, t0+5000),
		line(0, t0), // rank 0's first again, not its last: moved to t0+1
	)
	recs := collectAll(t, f.s)
	want := []string{fmt.Sprint(t0), fmt.Sprint(t0 - 500), fmt.Sprint(t0), fmt.Sprint(t0 + 5000), fmt.Sprint(t0 + 1)}
	var got []string
	keys := map[string]bool{}
	for _, r := range recs {
		got = append(got, fmt.Sprint(r.TimeNS))
		if keys[seriesKey(r)] {
			t.Errorf("two records with the key %s", seriesKey(r))
		}
		keys[seriesKey(r)] = true
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("times %v, want %v", got, want)
	}
	if n := intField(t, recs[4], "sender_ns"); n != t0 {
		t.Errorf("the moved marker's sender_ns %d, want its stamp %d", n, t0)
	}
	for k, want := range map[string]uint64{"time_bumps": 1, "time_unchecked": 0, "series": 2} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("self %s = %d, want %d", k, got, want)
		}
	}
}

// Past the times a series holds, a marker stamped like one it let go
// cannot be checked: it ships at its stamp and is counted.
func TestMarkerSourceCountsUncheckedTimes(t *testing.T) {
	f := newMarkerFixture(t, timebase.NewTranslators(), 100)
	const t0 = int64(1_700_000_000_000_000_000)
	var lines []string
	for i := range int64(record.SeriesRecent + 1) {
		lines = append(lines, fmt.Sprintf("tick rt=%d", t0+i*1000))
	}
	f.send(append(lines, fmt.Sprintf("tick rt=%d", t0))...)
	recs := collectAll(t, f.s)
	if len(recs) != record.SeriesRecent+2 || recs[len(recs)-1].TimeNS != t0 {
		t.Fatalf("%d records, the last at %d: want %d, the last at its stamp %d", len(recs), recs[len(recs)-1].TimeNS, record.SeriesRecent+2, t0)
	}
	if b, u := collecttest.Self(t, f.s, "time_bumps").U, collecttest.Self(t, f.s, "time_unchecked").U; b != 0 || u != 1 {
		t.Errorf("time_bumps %d, time_unchecked %d; want 0 and 1", b, u)
	}
}

func TestMarkerSourceBoundsSeries(t *testing.T) {
	f := newMarkerFixture(t, timebase.NewTranslators(), 2)
	f.send("a", "b k=1", "a k=1", "a", "b k=1", "c")
	recs := collectAll(t, f.s)
	var got []string
	for _, r := range recs {
		got = append(got, r.Tag("name")+"/"+r.Tag("k"))
	}
	if strings.Join(got, " ") != "a/ b/1 a/ b/1" {
		t.Errorf("shipped %v", got)
	}
	if collecttest.Self(t, f.s, "series").U != 2 || collecttest.Self(t, f.s, "series_dropped").U != 2 {
		t.Errorf("series %d dropped %d", collecttest.Self(t, f.s, "series").U, collecttest.Self(t, f.s, "series_dropped").U)
	}
}

func TestMarkerSocketFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.sock")
	open := func() (*markerSource, error) {
		return newMarkerSource(path, 0o620, 10, timebase.NewTranslators(), slog.New(slog.DiscardHandler))
	}
	d, err := open()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o620 {
		t.Fatalf("socket file %v, %v: want a socket of mode 0620", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want the socket only", len(ents))
	}
	// A second agent on a live socket is refused.
	if _, err := open(); !errors.Is(err, marker.ErrInUse) {
		t.Fatalf("second source on a live socket: %v", err)
	}
	if err := d.r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("close left the socket file: %v", err)
	}

	// A stale socket (its listener gone, the file left) is replaced.
	stale, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	stale.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Skipf("closing a unixgram socket removed its file here: %v", err)
	}
	d, err = open()
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	c, err := marker.Dial(path)
	if err != nil {
		t.Fatalf("dial the replaced socket: %v", err)
	}
	c.Close()
	// Close leaves a successor's socket alone.
	os.Remove(path)
	succ, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer succ.Close()
	d.r.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("close removed another's socket: %v", err)
	}

	// Anything that is not a socket is left alone.
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o600)
	if _, err := newMarkerSource(file, 0o660, 10, timebase.NewTranslators(), slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a regular file at the path: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("the file was touched")
	}
}

func TestMarkerConfig(t *testing.T) {
	c, err := Parse("x.yaml", []byte("paths:\n  runtime_dir: /run/mon\nmarker:\n  enabled: true\n  mode: \"0600\"\n  ring: 16\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("x.yaml", []byte("marker:\n  mode: 0600\n")); err == nil || !strings.Contains(err.Error(), "marker.mode") {
		t.Errorf("an unquoted mode: %v", err)
	}
	m := c.Marker
	if want := (MarkerConfig{Enabled: true, Socket: "marker.sock", Mode: "0600", Ring: 16, Interval: time.Second, MaxSeries: 1000}); m != want {
		t.Fatalf("%+v, want %+v", m, want)
	}
	if p := m.path(c.Paths); p != "/run/mon/marker.sock" {
		t.Errorf("path %s", p)
	}
	if mode, err := m.fileMode(); err != nil || mode != 0o600 {
		t.Errorf("mode %v, %v", mode, err)
	}
	m.Socket = "/abs/m.sock"
	if p := m.path(c.Paths); p != "/abs/m.sock" {
		t.Errorf("path %s", p)
	}
	bad := MarkerConfig{Enabled: true, Socket: "", Mode: "999", Ring: 3, Interval: 0, MaxSeries: 0}
	err = validate(&bad)
	for _, key := range []string{"marker.socket", "marker.mode", "marker.ring", "marker.interval", "marker.max_series"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("no problem at %s in %v", key, err)
		}
	}
	if err := validate(&MarkerConfig{Enabled: true, Socket: "m", Mode: "0444", Ring: 1, Interval: 1, MaxSeries: 1}); err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("read-only mode: %v", err)
	}
	d := Default()
	if d.Marker.Enabled || validate(&d.Marker) != nil {
		t.Errorf("defaults %+v", d.Marker)
	}
}

func TestMarkerBuild(t *testing.T) {
	cfg := Default()
	cfg.Paths.RuntimeDir = t.TempDir()
	cfg.Marker.Enabled = true
	srcs, err := buildMarkerSource(&Env{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 1 || srcs[0].Name() != "marker" {
		t.Fatalf("sources %v", srcs)
	}
	p := filepath.Join(cfg.Paths.RuntimeDir, "marker.sock")
	if fi, err := os.Lstat(p); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket %v, %v", fi, err)
	}
	if _, err := buildMarkerSource(&Env{Config: &cfg}); !errors.Is(err, marker.ErrInUse) {
		t.Errorf("a second build on the same socket: %v", err)
	}
	if err := srcs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left: %v", err)
	}
}
