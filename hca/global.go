package hca

import (
	"sync/atomic"

	"github.com/monagent/monagent/timebase"
)

// Global is this agent's place on the cluster's global timeline (the
// hca section): the model of its HCA clock (CLOCK_MONOTONIC_RAW, or a test
// clock over it) against rank 0's, set by the hca source after every sync.
// Event sources ask it to place their stamps: global_ns is rank 0's HCA
// clock at the event, global_bound_ns the model's published bound there
// (Bound) plus the uncertainty of the move to MONOTONIC_RAW. Safe for
// concurrent use; a nil Global, or one without a model yet, places
// nothing.
type Global struct {
	clocks Clocks // the HCA clock over MONOTONIC_RAW, as rank 0 of these
	cur    atomic.Pointer[globalModel]
}

type globalModel struct {
	m     timebase.LinearModel
	round int64
}

// NewGlobal returns an agent's global clock. Its HCA clock is
// MONOTONIC_RAW, or for a test a virtual clock over it driftPPM fast and
// offsetNS ahead.
func NewGlobal(driftPPM float64, offsetNS int64) *Global {
	return &Global{clocks: Clocks{Drift: []float64{driftPPM * 1e-6}, Offset: []int64{offsetNS}}}
}

// Local is the HCA clock at MONOTONIC_RAW time raw.
func (g *Global) Local(raw int64) int64 { return g.clocks.At(0, raw) }

// Now reads the HCA clock.
func (g *Global) Now() int64 {
	t := timebase.MonotonicRawNS()
	return g.Local(t)
}

// Set installs the model of sync round round.
func (g *Global) Set(m timebase.LinearModel, round int64) {
	g.cur.Store(&globalModel{m: m, round: round})
}

// Model returns the current model and its round.
func (g *Global) Model() (timebase.LinearModel, int64, bool) {
	if g == nil {
		return timebase.LinearModel{}, 0, false
	}
	c := g.cur.Load()
	if c == nil {
		return timebase.LinearModel{}, 0, false
	}
	return c.m, c.round, true
}

// FromRaw places MONOTONIC_RAW time raw: the HCA clock then (local), the
// global time and its bound.
func (g *Global) FromRaw(raw int64) (local, global, bound int64, ok bool) {
	m, _, ok := g.Model()
	if !ok {
		return 0, 0, 0, false
	}
	x := g.Local(raw)
	return x, m.Apply(x), Bound(m, x), true
}

// Place moves ts to MONOTONIC_RAW along r (a route from ts's domain to
// monotonic_raw, kept by the caller's goroutine) and places it; the moved
// stamp's uncertainty (its own and the move's) is added to the bound.
func (g *Global) Place(r *timebase.Route, ts timebase.Timestamp) (local, global, bound int64, ok bool) {
	if _, _, has := g.Model(); !has {
		return 0, 0, 0, false
	}
	raw, err := r.Move(ts)
	if err != nil {
		return 0, 0, 0, false
	}
	local, global, bound, ok = g.FromRaw(raw.NS)
	return local, global, bound + raw.UncertaintyNS, ok
}
