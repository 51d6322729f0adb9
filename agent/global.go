package agent

import (
	"sync/atomic"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// GlobalClock is this agent's place on the cluster's global timeline (the
// hca section): the model of its HCA clock (CLOCK_MONOTONIC_RAW, or a test
// clock over it) against rank 0's, set by the hca source after every sync.
// Event sources ask it to place their stamps: global_ns is rank 0's HCA
// clock at the event, global_bound_ns the model's published bound there
// (hca.Bound) plus the uncertainty of the move to MONOTONIC_RAW. Safe for
// concurrent use; a nil GlobalClock, or one without a model yet, places
// nothing.
type GlobalClock struct {
	clocks hca.Clocks // the HCA clock over MONOTONIC_RAW, as rank 0 of these
	cur    atomic.Pointer[globalModel]
}

type globalModel struct {
	m     timebase.LinearModel
	round int64
}

// NewGlobalClock returns the global clock of an hca section; the HCA clock
// is MONOTONIC_RAW itself unless a test clock is configured.
func NewGlobalClock(c HCAConfig) *GlobalClock {
	g := &GlobalClock{clocks: hca.Clocks{Drift: []float64{0}, Offset: []int64{0}}}
	if tc := c.TestClock; tc != nil {
		g.clocks.Drift[0], g.clocks.Offset[0] = tc.DriftPPM*1e-6, int64(tc.Offset)
	}
	return g
}

// Local is the HCA clock at MONOTONIC_RAW time raw.
func (g *GlobalClock) Local(raw int64) int64 { return g.clocks.At(0, raw) }

// Now reads the HCA clock.
func (g *GlobalClock) Now() int64 {
	t, _ := timebase.MonotonicRaw.Now()
	return g.Local(t)
}

// Set installs the model of sync round round.
func (g *GlobalClock) Set(m timebase.LinearModel, round int64) {
	g.cur.Store(&globalModel{m: m, round: round})
}

// Model returns the current model and its round.
func (g *GlobalClock) Model() (timebase.LinearModel, int64, bool) {
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
func (g *GlobalClock) FromRaw(raw int64) (local, global, bound int64, ok bool) {
	m, _, ok := g.Model()
	if !ok {
		return 0, 0, 0, false
	}
	x := g.Local(raw)
	return x, m.Apply(x), hca.Bound(m, x), true
}

// Place moves ts to MONOTONIC_RAW along r (a route from ts's domain to
// monotonic_raw, kept by the caller's goroutine) and places it; the moved
// stamp's uncertainty (its own and the move's) is added to the bound.
func (g *GlobalClock) Place(r *timebase.Route, ts timebase.Timestamp) (local, global, bound int64, ok bool) {
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

// appendGlobal appends hca_local_ns, global_ns and global_bound_ns for ts
// when it can be placed, and reports whether it was.
func (g *GlobalClock) appendGlobal(f []record.Field, r *timebase.Route, ts timebase.Timestamp) ([]record.Field, bool) {
	local, global, bound, ok := g.Place(r, ts)
	if !ok {
		return f, false
	}
	return append(f, record.Int("hca_local_ns", local), record.Int("global_ns", global), record.Int("global_bound_ns", bound)), true
}
