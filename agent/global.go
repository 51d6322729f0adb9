package agent

import (
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// newGlobal is the hca section's global clock (hca.Global): MONOTONIC_RAW,
// or the test clock over it.
func newGlobal(c HCAConfig) *hca.Global {
	if tc := c.TestClock; tc != nil {
		return hca.NewGlobal(tc.DriftPPM, int64(tc.Offset))
	}
	return hca.NewGlobal(0, 0)
}

// appendGlobal appends hca_local_ns, global_ns and global_bound_ns for ts
// when g can place it, and reports whether it did.
func appendGlobal(g *hca.Global, f []record.Field, r *timebase.Route, ts timebase.Timestamp) ([]record.Field, bool) {
	local, global, bound, ok := g.Place(r, ts)
	if !ok {
		return f, false
	}
	return append(f, record.Int("hca_local_ns", local), record.Int("global_ns", global), record.Int("global_bound_ns", bound)), true
}
