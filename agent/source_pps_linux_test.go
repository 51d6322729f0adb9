package agent

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/record"
)

// fakePPS is a PPS device that returns scripted fetches: each is what the
// kernel's pps_kinfo would hold (latest stamps and sequence numbers); the
// real PPSTracker decides which edges are new and how many were lost.
type fakePPS struct {
	fetches chan gpio.PPSEvent
	tr      gpio.PPSTracker
	closed  chan struct{}
}

func newFakePPS(baseline gpio.PPSEvent) *fakePPS {
	f := &fakePPS{fetches: make(chan gpio.PPSEvent), closed: make(chan struct{})}
	f.tr.Baseline(&baseline)
	return f
}

func (f *fakePPS) Fetch(ctx context.Context) (gpio.PPSEvent, uint64, error) {
	for {
		select {
		case <-ctx.Done():
			return gpio.PPSEvent{}, 0, ctx.Err()
		case e := <-f.fetches:
			f.tr.Observe(&e)
			if e.NewAssert || e.NewClear {
				return e, e.LostAssert + e.LostClear, nil
			}
		}
	}
}

func (f *fakePPS) Close() error { close(f.closed); return nil }

type ppsFixture struct {
	t   *testing.T
	dev *fakePPS
	d   *ppsSource
	s   *collect.EventSource[ppsEdge]
}

func newPPSFixture(t *testing.T, assert, clear bool, baseline gpio.PPSEvent) *ppsFixture {
	t.Helper()
	dc := entryDefaults[PPSDeviceConfig]()
	dc.Device, dc.Name, dc.Assert, dc.Clear = "/dev/pps3", "gnss", assert, clear
	dev := newFakePPS(baseline)
	d := newPPSSource(dc, dc.Device, func() (ppsFetcher, error) { return dev, nil })
	s, err := collect.Decode("pps:gnss", time.Second, dc.Ring, d)
	if err != nil {
		t.Fatal(err)
	}
	stop := collecttest.Start(s)
	t.Cleanup(func() {
		stop()
		select {
		case <-dev.closed:
		default:
			t.Error("the device was not closed")
		}
	})
	return &ppsFixture{t: t, dev: dev, d: d, s: s}
}

// fetch hands the producer the fetches and waits until it queued wantEdges
// more edges.
func (f *ppsFixture) fetch(wantEdges int, evs ...gpio.PPSEvent) {
	f.t.Helper()
	want := f.s.Queue().Received() + uint64(wantEdges)
	for _, e := range evs {
		f.dev.fetches <- e
	}
	waitReceived(f.t, f.s.Queue().Received, want)
}

func waitReceived(t *testing.T, received func() uint64, want uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for received() < want {
		if time.Now().After(deadline) {
			t.Fatalf("producer queued %d events, want %d", received(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func collectAll[E any](t *testing.T, s *collect.EventSource[E]) []record.Record {
	t.Helper()
	b := &collect.Batch{Host: "h"}
	if err := s.Collect(context.Background(), b); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return b.Records
}

func tagOf(r record.Record, key string) string {
	for _, t := range r.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

const sec = int64(1_700_000_000_000_000_000)

func TestPPSSourceShipsEachNewEdgeAtItsStampAndCountsGaps(t *testing.T) {
	f := newPPSFixture(t, true, true, gpio.PPSEvent{AssertNS: sec - 1e9, AssertSeq: 10, ClearNS: sec - 9e8, ClearSeq: 10})
	f.fetch(3,
		gpio.PPSEvent{AssertNS: sec, AssertSeq: 11, ClearNS: sec - 9e8, ClearSeq: 10},             // assert
		gpio.PPSEvent{AssertNS: sec, AssertSeq: 11, ClearNS: sec + 1e8, ClearSeq: 11},             // clear
		gpio.PPSEvent{AssertNS: sec + 3e9, AssertSeq: 14, ClearNS: sec + 1e8 + 2e9, ClearSeq: 13}, // both, 2 + 1 lost
	)
	recs := collectAll(t, f.s)
	type want struct {
		t    int64
		edge string
		seq  uint64
	}
	wants := []want{{sec, "assert", 11}, {sec + 1e8, "clear", 11}, {sec + 3e9, "assert", 14}, {sec + 1e8 + 2e9, "clear", 13}}
	if len(recs) != len(wants) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(wants), recs)
	}
	for i, w := range wants {
		r := recs[i]
		if r.Measurement != "pps_event" || r.TimeNS != w.t || tagOf(r, "edge") != w.edge || tagOf(r, "device") != "/dev/pps3" ||
			tagOf(r, "name") != "gnss" || tagOf(r, "host") != "h" {
			t.Errorf("record %d: %s %v at %d, want %s at %d", i, r.Measurement, r.Tags, r.TimeNS, w.edge, w.t)
		}
		if got := gpioField(t, r, "sequence").U; got != w.seq {
			t.Errorf("record %d: sequence %d, want %d", i, got, w.seq)
		}
		if got := gpioField(t, r, "kernel_ns").I; got != w.t {
			t.Errorf("record %d: kernel_ns %d, want %d", i, got, w.t)
		}
	}
	// received + lost = the edges the device stamped after the baseline.
	for k, want := range map[string]uint64{"events": 4, "kernel_lost": 3, "assert_lost": 2, "clear_lost": 1,
		"assert_events": 2, "clear_events": 2, "ignored_edges": 0, "time_bumps": 0} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("%s %d, want %d", k, got, want)
		}
	}
	// The read latency of each kind: kernel stamp -> the fetch that brought it.
	for _, kind := range []string{"assert_", "clear_"} {
		p50, p99 := collecttest.Self(t, f.s, kind+"latency_p50_ns").I, collecttest.Self(t, f.s, kind+"latency_p99_ns").I
		mx, n := collecttest.Self(t, f.s, kind+"latency_max_ns").I, collecttest.Self(t, f.s, kind+"latency_samples").I
		if n != 2 || p50 <= 0 || p50 > p99 || p99 > mx {
			t.Errorf("%slatency p50 %d p99 %d max %d samples %d; want 2 samples, 0 < p50 <= p99 <= max", kind, p50, p99, mx, n)
		}
	}
}

func TestPPSSourceAssertOnlyIgnoresClearEdgesAndTheirLosses(t *testing.T) {
	f := newPPSFixture(t, true, false, gpio.PPSEvent{AssertSeq: 1, ClearSeq: 1})
	f.fetch(1,
		gpio.PPSEvent{AssertNS: sec, AssertSeq: 1, ClearNS: sec - 5e8, ClearSeq: 4}, // clear only (2 lost): not shipped
		gpio.PPSEvent{AssertNS: sec + 1e9, AssertSeq: 2, ClearNS: sec - 5e8, ClearSeq: 4},
	)
	recs := collectAll(t, f.s)
	if len(recs) != 1 || recs[0].TimeNS != sec+1e9 || tagOf(recs[0], "edge") != "assert" {
		t.Fatalf("records %+v, want one assert at %d", recs, sec+1e9)
	}
	for k, want := range map[string]uint64{"events": 1, "kernel_lost": 0, "clear_lost": 0, "ignored_edges": 1} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("%s %d, want %d", k, got, want)
		}
	}
}

// A stamp that repeats (a driver that stamps two edges alike) is moved 1 ns
// after the previous one: never two records with one key. A clock stepped back
// is not a repeat: its stamp is kept, or every later record would shift.
func TestPPSSourceNeverShipsTwoRecordsAtOneTime(t *testing.T) {
	f := newPPSFixture(t, true, false, gpio.PPSEvent{AssertSeq: 1})
	f.fetch(3,
		gpio.PPSEvent{AssertNS: sec, AssertSeq: 2},
		gpio.PPSEvent{AssertNS: sec, AssertSeq: 3},
		gpio.PPSEvent{AssertNS: sec - 1e9, AssertSeq: 4},
	)
	recs := collectAll(t, f.s)
	if len(recs) != 3 || recs[0].TimeNS != sec || recs[1].TimeNS != sec+1 || recs[2].TimeNS != sec-1e9 {
		t.Fatalf("records %+v, want at %d, +1 and the stepped-back %d", recs, sec, sec-1e9)
	}
	if got := gpioField(t, recs[2], "kernel_ns").I; got != sec-1e9 {
		t.Errorf("kernel_ns %d, want the stamp %d kept", got, sec-1e9)
	}
	if got := collecttest.Self(t, f.s, "time_bumps").U; got != 1 {
		t.Errorf("time_bumps %d, want 1", got)
	}
}

func TestPPSSourceErrorNamesDevice(t *testing.T) {
	dc := entryDefaults[PPSDeviceConfig]()
	dc.Device = "pps9"
	path := gpio.DevicePath(t.TempDir(), dc.Device)
	d := newPPSSource(dc, path, nil)
	s, err := collect.Decode("pps:pps9", time.Second, dc.Ring, d)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Produce(context.Background(), s.Queue())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no such device") {
		t.Fatalf("produce on a missing device: %v, want an error naming %s and the reason", err, path)
	}
}

// A real device, when there is one: it opens, or says why not.
func TestPPSRealDeviceOpensOrNamesWhyNot(t *testing.T) {
	if _, err := os.Stat("/dev/pps0"); err != nil {
		t.Skipf("no /dev/pps0 here (%v): the real-device half needs a PPS source", err)
	}
	dev, err := gpio.OpenPPS("/dev/pps0", gpio.PPSConfig{Assert: true})
	if err != nil {
		if !strings.Contains(err.Error(), "/dev/pps0") {
			t.Errorf("open error %v does not name the device", err)
		}
		t.Skipf("/dev/pps0: %v", err)
	}
	dev.Close()
}
