package hca

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/monagent/monagent/timebase"
)

// The algorithms work internally with sub-nanosecond offsets: clock readings
// are whole nanoseconds, but the quantities derived from them (half an odd
// RTT, a mean RTT, a regression's intercept, a merged intercept, a parent's
// global time) are not, and rounding each of them biases every level of a
// tree by up to half a nanosecond. Only the final model is rounded, once,
// with its origin moved so that the rounding costs almost nothing (fine.model).

// finePoint is a fitpoint whose offset keeps sub-nanosecond precision.
// RefX + RefFrac is the mean of the reference's readings it came from, so
// that they can be mapped to the reference's global time after the fact
// (mapPoints).
type finePoint struct {
	X       int64
	Offset  float64
	RefX    int64
	RefFrac float64
}

// mapPoints returns points with the reference's readings mapped through
// its model ref, unrounded: each offset becomes the client's offset from
// the reference's global time. The model is linear, so mapping the mean
// reading equals averaging the mapped readings.
func mapPoints(points []finePoint, ref fine) []finePoint {
	out := make([]finePoint, len(points))
	for i, p := range points {
		p.Offset += ref.offsetAt(p.RefX) + ref.Slope*p.RefFrac
		out[i] = p
	}
	return out
}

// meanReading is base + mean(d) as a whole part and a fraction.
func meanReading(base int64, sum float64, n int) (int64, float64) {
	m := sum / float64(n)
	r := math.Round(m)
	return base + int64(r), m - r
}

// fine is a timebase.LinearModel whose offset at Origin is Intercept + frac,
// |frac| ≤ 0.5 once normalised.
type fine struct {
	timebase.LinearModel
	frac float64
}

// normalise moves the whole nanoseconds of frac into Intercept.
func (f fine) normalise() fine {
	k := math.Round(f.frac)
	f.Intercept += int64(k)
	f.frac -= k
	return f
}

// offsetAt is the model's offset at local time x, unrounded.
func (f fine) offsetAt(x int64) float64 {
	return float64(f.Intercept) + f.frac + f.Slope*float64(x-f.Origin)
}

// maxOriginShiftNS bounds how far model moves a line's origin.
const maxOriginShiftNS = 1_000_000_000

// model returns f as a timebase.LinearModel. Its intercept must be whole
// nanoseconds, so the origin is moved (by at most 0.5/|Slope| ns, and at
// most 1 s) to where the line is nearest a whole nanosecond: the rounding
// then costs at most |Slope|/2 ns instead of up to 0.5 ns.
func (f fine) model() timebase.LinearModel {
	f = f.normalise()
	if f.frac != 0 && f.Slope != 0 {
		d := math.Round(-f.frac / f.Slope)
		if math.Abs(d) <= maxOriginShiftNS {
			f.Origin += int64(d)
			f.frac += f.Slope * d
			f = f.normalise()
		}
	}
	return f.LinearModel
}

// mergeFine is timebase.Merge (m1: p2 relative to p1, m2: p3 relative to
// p2) without rounding the merged intercept.
func mergeFine(m1, m2 fine) fine {
	out := fine{LinearModel: timebase.Merge(m1.LinearModel, m2.LinearModel)}
	// offset(t3) = b2 + s2(t3−X2) + b1 + s1(t3 − offset2(t3) − X1), at t3 = X2.
	out.Intercept = m1.Intercept + m2.Intercept
	out.frac = m1.frac + m2.frac + m1.Slope*(float64(m2.Origin-m2.Intercept-m1.Origin)-m2.frac)
	return out.normalise()
}

// fineRTT is the RTT the fitpoints subtract half of: MeanNS, or Mean for
// an RTT made without it.
func fineRTT(r rttSummary) float64 {
	if r.MeanNS != 0 {
		return r.MeanNS
	}
	return float64(r.Mean)
}

// measureFitpointFine takes one fitpoint of client against ref from
// exchanges ping-pongs, chosen by filter. With MedianSample (Jones & Koenig)
// each ping-pong gives the sample t_c − T_r − rtt/2, unrounded (t_c = Recv,
// T_r = Remote, rtt the pair's mean RTT, which the caller must have
// measured: see rttCache), at the client's time t_c − rtt/2, when the
// reference read T_r (the notes pair it with t_c, which shifts the line by
// slope × rtt/2: up to 4 ns at 200 ppm and a 40 µs RTT); the median sample
// is kept. The fitpoint keeps the reference's mean reading, so
// that mapPoints can carry it to the reference's global time later (HCA3).
func measureFitpointFine(ctx context.Context, net Network, client, ref int, rtt float64, exchanges int, filter FitpointFilter) (finePoint, error) {
	if exchanges < 1 {
		return finePoint{}, fmt.Errorf("fitpoint %d->%d: %d exchanges: %w", client, ref, exchanges, errNoSamples)
	}
	if rtt < 0 {
		return finePoint{}, fmt.Errorf("fitpoint %d->%d: negative rtt %g", client, ref, rtt)
	}
	half := rtt / 2
	samples := make([]finePoint, 0, exchanges)
	var all []Exchange
	for range exchanges {
		e, err := net.Exchange(ctx, client, ref)
		if err != nil {
			return finePoint{}, fmt.Errorf("fitpoint %d->%d: %w", client, ref, err)
		}
		if filter == MinRTTSample {
			all = append(all, e)
			continue
		}
		off := float64(e.Recv-e.Remote) - half
		samples = append(samples, finePoint{X: e.Recv - int64(math.Round(half)), Offset: off, RefX: e.Remote})
	}
	if filter == MinRTTSample {
		return minRTTPoint(all), nil
	}
	slices.SortStableFunc(samples, func(a, b finePoint) int { return cmp.Compare(a.Offset, b.Offset) })
	med := samples[(len(samples)-1)/2]
	// A sample combines two whole-nanosecond readings, so on a clean link
	// the samples scatter over ±1 ns of the truth; their mean removes that
	// rounding noise, which a single median sample keeps (and which tree
	// algorithms extrapolate). Under jitter the window holds the median
	// alone, the real observation of Jones & Koenig.
	var sx, sy, sr float64
	var n int
	for _, p := range samples {
		if math.Abs(p.Offset-med.Offset) <= quantumWindowNS {
			sx += float64(p.X - med.X)
			sy += p.Offset
			sr += float64(p.RefX - med.RefX)
			n++
		}
	}
	fp := finePoint{X: med.X + int64(math.Round(sx/float64(n))), Offset: sy / float64(n)}
	fp.RefX, fp.RefFrac = meanReading(med.RefX, sr, n)
	return fp, nil
}

// minRTTPoint is the fitpoint of the exchange that waited least, at its own
// midpoint (the responder's reading is the midpoint of its arrival and
// answer). Exchanges within quantumWindowNS of the least round trip are
// averaged with it, as the median filter does, to remove the noise of
// nanosecond readings on a clean link.
func minRTTPoint(all []Exchange) finePoint {
	least := slices.MinFunc(all, func(a, b Exchange) int { return cmp.Compare(a.rtt(), b.rtt()) }).rtt()
	var x0, r0 int64
	var sx, sy, sr float64
	var n int
	for _, e := range all {
		if e.rtt() > least+quantumWindowNS {
			continue
		}
		// Differences first: readings near 1e15 ns keep only 1/8 ns in a
		// float64.
		half := float64(e.rtt()) / 2
		off := float64(e.Send-e.Remote) + half
		if n == 0 {
			x0, r0 = e.Send, e.Remote
		}
		sx += float64(e.Send-x0) + half
		sy += off
		sr += float64(e.Remote - r0)
		n++
	}
	mx := sx / float64(n)
	x := x0 + int64(math.Round(mx))
	// The mean offset is at the mean midpoint; move it to the whole
	// nanosecond x along a line of slope ≈ 0 (the error is |slope| · 0.5 ns).
	fp := finePoint{X: x, Offset: sy / float64(n)}
	fp.RefX, fp.RefFrac = meanReading(r0, sr, n)
	return fp
}

func medianFloat(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return v[n/2-1]/2 + v[n/2]/2
}

// quantumWindowNS is how close to the median sample a fitpoint's samples
// must be to be averaged with it: the spread that nanosecond clock readings
// alone give a sample.
const quantumWindowNS = 2

// fitFine fits a line through sub-nanosecond fitpoints, its intercept
// keeping its fraction, and rejects it with ErrAbsurdSlope if |slope| >
// maxSlope. The model's N, MeanX, ResidualNS and SlopeErr carry its
// uncertainty; for Theil–Sen they are the least-squares formulas applied to
// the robust line's residuals, an approximation.
func fitFine(points []finePoint, method FitMethod) (fine, error) {
	var f fine
	var err error
	switch method {
	case LeastSquares:
		f, err = leastSquaresFine(points)
	case TheilSen:
		f, err = theilSenFine(points)
	default:
		return fine{}, fmt.Errorf("fit line: unknown method %d", int(method))
	}
	if err != nil {
		return fine{}, fmt.Errorf("fit line (%v): %w", method, err)
	}
	if math.Abs(f.Slope) > maxSlope || math.IsNaN(f.Slope) {
		return fine{}, fmt.Errorf("fit line (%v) over %d points: slope %.1f ppm: %w", method, len(points), f.Slope*1e6, ErrAbsurdSlope)
	}
	return f, nil
}

// fineStats fills N, MeanX, ResidualNS and SlopeErr of f from the residuals
// of points about f's line (the least-squares formulas), as timebase.Fit
// does.
func fineStats(f fine, points []finePoint) fine {
	n := len(points)
	x0 := points[0].X
	var sx float64
	for _, p := range points {
		sx += float64(p.X - x0)
	}
	mx := sx / float64(n)
	f.N, f.MeanX = n, x0+int64(math.Round(mx))
	if n > 2 {
		var sse, sxx float64
		for _, p := range points {
			r := p.Offset - f.offsetAt(p.X)
			sse += r * r
			dx := float64(p.X-x0) - mx
			sxx += dx * dx
		}
		f.ResidualNS = math.Sqrt(sse / float64(n-2))
		if sxx > 0 {
			f.SlopeErr = f.ResidualNS / math.Sqrt(sxx)
		}
	}
	return f
}

// nearestMean returns the X of points nearest their mean (x0 + mx).
func nearestMean(points []finePoint, mx float64) int64 {
	x0 := points[0].X
	origin := x0
	for _, p := range points {
		if math.Abs(float64(p.X-x0)-mx) < math.Abs(float64(origin-x0)-mx) {
			origin = p.X
		}
	}
	return origin
}

// leastSquaresFine is timebase.Fit over sub-nanosecond points, the
// arithmetic on differences from the first point.
func leastSquaresFine(points []finePoint) (fine, error) {
	if len(points) < 2 {
		return fine{}, fmt.Errorf("fit %d points: %w", len(points), timebase.ErrTooFewPoints)
	}
	x0, y0 := points[0].X, points[0].Offset
	n := float64(len(points))
	var sx, sy float64
	for _, p := range points {
		sx += float64(p.X - x0)
		sy += p.Offset - y0
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, p := range points {
		dx := float64(p.X-x0) - mx
		sxx += dx * dx
		sxy += dx * (p.Offset - y0 - my)
	}
	if sxx == 0 {
		return fine{}, fmt.Errorf("fit %d points at one local time: %w", len(points), timebase.ErrTooFewPoints)
	}
	slope := sxy / sxx
	origin := nearestMean(points, mx)
	b := my + slope*(float64(origin-x0)-mx) // offset at origin − y0
	y0i := math.Round(y0)
	f := fine{LinearModel: timebase.LinearModel{Origin: origin, Intercept: int64(y0i), Slope: slope}, frac: y0 - y0i + b}
	return fineStats(f.normalise(), points), nil
}

// theilSenFine is the Theil–Sen fit over sub-nanosecond points.
func theilSenFine(points []finePoint) (fine, error) {
	n := len(points)
	if n < 2 {
		return fine{}, fmt.Errorf("fit %d points: %w", n, timebase.ErrTooFewPoints)
	}
	if n > maxTheilSenPoints {
		return fine{}, fmt.Errorf("theil-sen over %d points: at most %d (it keeps all n²/2 slopes)", n, maxTheilSenPoints)
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if dx := points[j].X - points[i].X; dx != 0 {
				slopes = append(slopes, (points[j].Offset-points[i].Offset)/float64(dx))
			}
		}
	}
	if len(slopes) == 0 {
		return fine{}, fmt.Errorf("fit %d points at one local time: %w", n, timebase.ErrTooFewPoints)
	}
	s := medianFloat(slopes)
	x0, y0 := points[0].X, points[0].Offset
	var sx float64
	for _, p := range points {
		sx += float64(p.X - x0)
	}
	origin := nearestMean(points, sx/float64(n))
	icepts := make([]float64, n)
	for i, p := range points {
		icepts[i] = p.Offset - y0 - s*float64(p.X-origin)
	}
	y0i := math.Round(y0)
	f := fine{LinearModel: timebase.LinearModel{Origin: origin, Intercept: int64(y0i), Slope: s}, frac: y0 - y0i + medianFloat(icepts)}
	return fineStats(f.normalise(), points), nil
}

// skampiFine is skampiOffset that also returns the unrounded offset at
// est.At: the midpoint of the intervals, carried along cfg.Slope without
// rounding.
func skampiFine(ctx context.Context, net Network, client, ref int, cfg skampiConfig) (offsetEstimate, float64, error) {
	var exact float64
	est, err := skampiOffset(ctx, net, client, ref, cfg, &exact)
	return est, exact, err
}

// offsetFine is est as a fine model with slope s (offsetEstimate.Model),
// its intercept the unrounded offset exact.
func offsetFine(est offsetEstimate, exact, s float64, base timebase.LinearModel) fine {
	f := fine{LinearModel: est.Model(s, base)}
	f.Intercept = 0
	f.frac = exact
	return f.normalise()
}
