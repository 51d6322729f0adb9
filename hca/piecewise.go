package hca

import (
	"math"

	"github.com/monagent/monagent/timebase"
)

// Interpolate places local time x of a node between two of its models,
// before and after, from consecutive synchronisations, the way Intel Trace
// Collector corrects a trace post hoc with piecewise clock models: between
// the two models' anchors (the mean times of their fits, where each is best)
// the offset is the blend of the two models' offsets, weighted by how near x
// is to each anchor, and so is the bound. A model's error grows with the
// distance from its fit, and each anchor's weight falls as that distance
// grows, so the blend's bound is smaller than either model's extrapolated
// across the gap, and it follows a clock whose frequency changed between
// the syncs, which a single line cannot. Before the first anchor x is placed
// by before alone, after the second by after alone. If after is not later
// than before, after alone is used.
//
// It returns the offset (node − global) at x and its bound; the global time
// is x − offset.
func Interpolate(before, after timebase.LinearModel, x int64) (offset, bound int64) {
	a, b := before.MeanX, after.MeanX
	switch {
	case b <= a || x >= b:
		return after.Offset(x), Bound(after, x)
	case x <= a:
		return before.Offset(x), Bound(before, x)
	}
	w := float64(x-a) / float64(b-a) // after's weight
	o := (1-w)*float64(before.Offset(x)) + w*float64(after.Offset(x))
	u := (1-w)*float64(Bound(before, x)) + w*float64(Bound(after, x))
	// The two models may disagree by more than their bounds say (a clock
	// whose frequency changed): half the disagreement joins the bound.
	d := math.Abs(float64(before.Offset(x)-after.Offset(x))) * w * (1 - w)
	return int64(math.Round(o)), int64(math.Ceil(u + d))
}
