package hca

import (
	"math"
	"testing"

	"github.com/monagent/monagent/timebase"
)

func TestGlobalPlacesThroughMonotonicRaw(t *testing.T) {
	g := NewGlobal(20, 5_000_000) // a test clock 5 ms ahead and 20 ppm fast over MONOTONIC_RAW
	m := timebase.LinearModel{Origin: 1e9, Intercept: 3_000_000, Slope: 7e-6, N: 20, MeanX: 1.5e9, ResidualNS: 40, SlopeErr: 2e-9, FloorNS: 100}
	tr := timebase.NewTranslators() // monotonic = raw + 1000 ns
	for _, x := range []int64{1e9, 2e9, 3e9} {
		tr.Get(timebase.DomainMonotonicRaw, timebase.DomainMonotonic, 8).Add(timebase.Sample{Local: x, Ref: x + 1000, DelayNS: 20})
	}
	r := tr.Route(timebase.DomainMonotonic, timebase.DomainMonotonicRaw)
	mono := int64(2_000_001_000)
	if _, _, _, ok := g.Place(r, timebase.Timestamp{NS: mono, Domain: timebase.DomainMonotonic}); ok {
		t.Fatal("placed before any model was set")
	}
	var none *Global
	if _, _, _, ok := none.Place(r, timebase.Timestamp{NS: mono, Domain: timebase.DomainMonotonic}); ok {
		t.Fatal("a nil Global placed a stamp")
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
	if mb := Bound(m, wantLocal); bound <= mb+5 {
		t.Errorf("bound %d, want more than the model's %d plus the stamp's 5", bound, mb)
	}
	if _, round, _ := g.Model(); round != 4 {
		t.Errorf("round %d, want 4", round)
	}
}
