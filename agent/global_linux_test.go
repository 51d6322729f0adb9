package agent

import (
	"testing"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// testGlobal is a global clock with a test clock 5 ms ahead and 20 ppm fast
// over MONOTONIC_RAW, and a model 3 ms and 7 ppm off the root.
func testGlobal() (*hca.Global, timebase.LinearModel) {
	g := newGlobal(HCAConfig{TestClock: &HCATestClock{Offset: 5_000_000, DriftPPM: 20}})
	m := timebase.LinearModel{Origin: 1e9, Intercept: 3_000_000, Slope: 7e-6, N: 20, MeanX: 1.5e9, ResidualNS: 40, SlopeErr: 2e-9, FloorNS: 100}
	return g, m
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
