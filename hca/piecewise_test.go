package hca

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// TestInterpolateBeatsExtrapolation: a clock whose frequency drifts
// (offset quadratic in time, as a warming oscillator's) is synchronised
// twice, 60 s apart, each time by a least-squares fit over 2 s of noisy
// fitpoints. Across the gap, interpolating between the two models errs less
// than extrapolating the first, and its bound covers every true error and is
// smaller than the extrapolated bound.
func TestInterpolateBeatsExtrapolation(t *testing.T) {
	const (
		d0      = 40e-6 // frequency at t = 0
		dd      = 2e-9  // frequency change per second: 0.12 ppm over the gap
		noiseNS = 100   // fitpoint noise
		gap     = 60e9  // between the syncs
		span    = 2e9   // of each fit
		points  = 20    // per fit
	)
	truth := func(x int64) float64 { s := float64(x) / 1e9; return 1e6 + d0*float64(x) + dd*s*s*1e9/2 }
	rng := rand.New(rand.NewPCG(1, 2))
	fit := func(start int64) timebase.LinearModel {
		var pts []timebase.Point
		for i := range points {
			x := start + int64(i)*span/(points-1)
			pts = append(pts, timebase.Point{X: x, Offset: int64(math.Round(truth(x) + rng.NormFloat64()*noiseNS))})
		}
		m, err := fitLine(pts, LeastSquares)
		if err != nil {
			t.Fatal(err)
		}
		return publish(m)
	}
	before, after := fit(0), fit(int64(gap))
	var worstInter, worstExtra, maxBoundInter, maxBoundExtra float64
	for x := before.MeanX; x <= after.MeanX; x += 1e9 {
		o, b := Interpolate(before, after, x)
		ei := math.Abs(float64(o) - truth(x))
		ee := math.Abs(float64(before.Offset(x)) - truth(x))
		if ei > float64(b) {
			t.Errorf("at %.0f s: interpolated error %.0f ns beyond its bound %d", float64(x)/1e9, ei, b)
		}
		worstInter, worstExtra = max(worstInter, ei), max(worstExtra, ee)
		maxBoundInter, maxBoundExtra = max(maxBoundInter, float64(b)), max(maxBoundExtra, float64(Bound(before, x)))
	}
	t.Logf("over the 60 s gap: interpolation max |error| %.0f ns (bound ≤ %.0f), extrapolation %.0f ns (bound ≤ %.0f)",
		worstInter, maxBoundInter, worstExtra, maxBoundExtra)
	if worstInter >= worstExtra/2 {
		t.Errorf("interpolation's max error %.0f ns is not under half extrapolation's %.0f", worstInter, worstExtra)
	}
	if maxBoundInter >= maxBoundExtra {
		t.Errorf("interpolation's bound %.0f ns is not below extrapolation's %.0f", maxBoundInter, maxBoundExtra)
	}
	// Outside the anchors, and with the models in the wrong order, one
	// model alone is used.
	if o, b := Interpolate(before, after, -5e9); o != before.Offset(-5e9) || b != Bound(before, -5e9) {
		t.Error("before the first anchor: not the first model")
	}
	if o, _ := Interpolate(before, after, int64(gap)*2); o != after.Offset(int64(gap)*2) {
		t.Error("after the second anchor: not the second model")
	}
	if o, _ := Interpolate(after, before, int64(gap)/2); o != before.Offset(int64(gap)/2) {
		t.Error("models out of order: not the later argument alone")
	}
}
