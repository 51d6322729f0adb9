package agent

import (
	"math"
	"testing"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// testGlobal is a global clock with a test clock 5 ms ahead and 20 ppm fast
// over MONOTONIC_RAW, and a model 3 ms and 7 ppm off the root.
func testGlobal() (*GlobalClock, timebase.LinearModel) {
	g := NewGlobalClock(HCAConfig{TestClock: &HCATestClock{Offset: 5_000_000, DriftPPM: 20}})
	m := timebase.LinearModel{Origin: 1e9, Intercept: 3_000_000, Slope: 7e-6, N: 20, MeanX: 1.5e9, ResidualNS: 40, SlopeErr: 2e-9, FloorNS: 100}
	return g, m
}

func TestGlobalClockPlacesThroughMonotonicRaw(t *testing.T) {
	g, m := testGlobal()
	tr := fakeModels(false) // monotonic = raw + 1000 ns, realtime = raw + epoch
	r := tr.Route(timebase.DomainMonotonic, timebase.DomainMonotonicRaw)
	mono := int64(2_000_001_000)
	if _, _, _, ok := g.Place(r, timebase.Timestamp{NS: mono, Domain: timebase.DomainMonotonic}); ok {
		t.Fatal("placed before any model was set")
	}
	var none *GlobalClock
	if _, _, _, ok := none.Place(r, timebase.Timestamp{NS: mono, Domain: timebase.DomainMonotonic}); ok {
		t.Fatal("a nil GlobalClock placed a stamp")
	}
	g.Set(m, 4)
	local, global, bound, ok := g.Place(r, timebase.Timestamp{NS: mono, Domain: timebase.DomainMonotonic, UncertaintyNS: 5})
	if !ok {
		t.Fatal("not placed with a model")
	}
	raw := mono - 1000
	wantLocal := raw + int64(math.Round(20e-6*float64(raw))) + 5_000_000
	if local != wantLocal {
		t.Errorf("local %d, want %d (the test clock at raw %d)", local, wantLocal, raw)
	}
	if want := wantLocal - m.Offset(wantLocal); global != want {
		t.Errorf("global %d, want %d", global, want)
	}
	// The bound is the model's published bound plus the stamp's and the
	// move's uncertainty: more than the model's alone.
	if mb := hca.Bound(m, wantLocal); bound <= mb+5 {
		t.Errorf("bound %d, want more than the model's %d plus the stamp's 5", bound, mb)
	}
	if _, round, _ := g.Model(); round != 4 {
		t.Errorf("round %d, want 4", round)
	}
}

func TestGPIOEdgesOnTheGlobalTimeline(t *testing.T) {
	f := newGPIOFixture(t, []GPIOLineConfig{gpioLineCfg(17, "sensor", "monotonic")}, fakeModels(false), timebase.DomainUnknown, 64)
	g, m := testGlobal()
	f.d.global = g
	now, _ := timebase.Monotonic.Now()
	f.write(gpio.Event{TimestampNS: now - 2e6, Offset: 17, Seqno: 1, LineSeqno: 1, Edge: gpio.EdgeRising})
	recs := f.collect()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	if _, ok := recs[0].Field("global_ns"); ok {
		t.Error("global_ns before the first model")
	}
	if f.d.unplaced != 1 {
		t.Errorf("unplaced %d, want 1", f.d.unplaced)
	}
	g.Set(m, 1)
	f.write(gpio.Event{TimestampNS: now - 1e6, Offset: 17, Seqno: 2, LineSeqno: 2, Edge: gpio.EdgeFalling})
	recs = f.collect()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	local, global, bound, _ := g.Place(f.d.tr.Route(timebase.DomainMonotonic, timebase.DomainMonotonicRaw),
		timebase.Timestamp{NS: now - 1e6, Domain: timebase.DomainMonotonic})
	for key, want := range map[string]int64{"hca_local_ns": local, "global_ns": global, "global_bound_ns": bound} {
		if got := gpioField(t, recs[0], key).I; got != want {
			t.Errorf("%s %d, want %d", key, got, want)
		}
	}
}
