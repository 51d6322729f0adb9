package hca

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/monagent/monagent/timebase"
)

// MaxSlope is the largest |slope| a fitted model may have (500 ppm). Crystal
// oscillators are within ±100 ppm of nominal, so a pair differs by at most
// ~200 ppm; a steeper fit means the measurement went wrong.
const MaxSlope = 500e-6

// ErrAbsurdSlope is returned (wrapped) for a fitted slope beyond ±MaxSlope.
// Algorithms count these rejections in Result.Rejected.
var ErrAbsurdSlope = errors.New("hca: absurd slope")

// ErrScattered is returned (wrapped) for a fit whose fitpoints scatter about
// their line far more than the pair's round trips allow: a clock stepped
// during the measurement, or a link that changed its delay, bends a line
// without steepening it beyond MaxSlope. Algorithms count these rejections
// in Result.Rejected, as they do absurd slopes, and re-measure the pair.
var ErrScattered = errors.New("hca: fitpoints scattered (a clock step?)")

// MinScatterLimitNS is the least RMS scatter of a fit's fitpoints about
// its line that counts as scattered (ErrScattered), whatever the pair's
// round trips: a fitpoint is the shortest of its exchanges, and on any LAN
// they scatter by well under a microsecond.
const MinScatterLimitNS = 10_000

// scatterLimit is the RMS scatter beyond which a pair's fit is rejected:
// 20 times the bound on its fitpoints' bias from the RTT spread
// (fitpointBias), and at least MinScatterLimitNS.
func scatterLimit(bias int64) float64 {
	return max(MinScatterLimitNS, 20*float64(bias))
}

// ErrNoSamples is returned when an estimate has nothing to work on.
var ErrNoSamples = errors.New("hca: no samples")

// RTT summarises the round trips measured between a pair.
//
// Outliers are cut at 1.5 × the 75th percentile: every RTT above that is
// dropped before the mean and minimum are taken. This cut keeps everything
// on a clean link (unlike dropping a fixed top 10 %) and still removes the
// long tail of delayed answers.
type RTT struct {
	Mean    int64 // mean of the kept RTTs (ns)
	Min     int64 // smallest RTT (ns)
	Kept    int
	Dropped int
	// MeanNS is Mean unrounded: the fitpoints subtract half of it, and
	// half a rounded mean biases every sample by up to 0.25 ns (0.5 ns
	// with an odd integer halved).
	MeanNS float64
}

// SummarizeRTT applies the outlier cutoff to rtts and summarises the rest.
// rtts is not modified.
func SummarizeRTT(rtts []int64) (RTT, error) {
	if len(rtts) == 0 {
		return RTT{}, fmt.Errorf("summarize rtt: %w", ErrNoSamples)
	}
	sorted := slices.Clone(rtts)
	slices.Sort(sorted)
	p75 := sorted[(len(sorted)-1)*3/4]
	cut := p75 + p75/2
	var sum, kept int64
	for _, r := range sorted {
		if r > cut {
			break
		}
		sum += r
		kept++
	}
	return RTT{
		Mean:    roundDiv(sum, kept),
		MeanNS:  float64(sum) / float64(kept),
		Min:     sorted[0],
		Kept:    int(kept),
		Dropped: len(sorted) - int(kept),
	}, nil
}

// MeasureRTT runs warmup ping-pongs from from to to whose results are thrown
// away (caches, ARP, a sleeping peer), then n that are summarised.
func MeasureRTT(ctx context.Context, net Network, from, to, warmup, n int) (RTT, error) {
	if n < 1 {
		return RTT{}, fmt.Errorf("measure rtt %d->%d: %d exchanges: %w", from, to, n, ErrNoSamples)
	}
	for range warmup {
		if _, err := net.Exchange(ctx, from, to); err != nil {
			return RTT{}, fmt.Errorf("measure rtt %d->%d: warm-up: %w", from, to, err)
		}
	}
	rtts := make([]int64, 0, n)
	for range n {
		e, err := net.Exchange(ctx, from, to)
		if err != nil {
			return RTT{}, fmt.Errorf("measure rtt %d->%d: %w", from, to, err)
		}
		rtts = append(rtts, e.RTT())
	}
	return SummarizeRTT(rtts)
}

// RTTCache measures each directed pair's RTT once and then answers from the
// cache. It also remembers the best RTT seen on a pair by any measurement,
// which SKaMPIOffset uses for its early stop. It is safe for concurrent
// use; concurrent Gets of one pair may both measure it (the later result is
// kept), which parallel rounds of disjoint pairs never do.
type RTTCache struct {
	Warmup, N int // passed to MeasureRTT

	mu   sync.Mutex
	rtt  map[[2]int]RTT
	best map[[2]int]int64
}

// NewRTTCache returns an empty cache that measures with warmup and n.
func NewRTTCache(warmup, n int) *RTTCache {
	return &RTTCache{Warmup: warmup, N: n, rtt: map[[2]int]RTT{}, best: map[[2]int]int64{}}
}

// Get returns the pair's RTT, measuring it only if it is not cached yet.
func (c *RTTCache) Get(ctx context.Context, net Network, from, to int) (RTT, error) {
	k := [2]int{from, to}
	c.mu.Lock()
	r, ok := c.rtt[k]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := MeasureRTT(ctx, net, from, to, c.Warmup, c.N)
	if err != nil {
		return RTT{}, err
	}
	c.mu.Lock()
	c.rtt[k] = r
	c.mu.Unlock()
	c.Observe(from, to, r.Min)
	return r, nil
}

// Best returns the smallest RTT seen on the pair, or 0 if none was.
func (c *RTTCache) Best(from, to int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.best[[2]int{from, to}]
}

// Observe records an RTT seen on the pair by any measurement.
func (c *RTTCache) Observe(from, to int, rtt int64) {
	k := [2]int{from, to}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.best[k]; !ok || rtt < b {
		c.best[k] = rtt
	}
}

// MeasureFitpoint takes one Jones & Koenig fitpoint of client against ref:
// exchanges ping-pongs from client to ref, each giving the sample
// t_c − T_r − rtt/2 (t_c = Recv, T_r = Remote, rtt the pair's cached mean
// RTT, which the caller must have measured: see RTTCache). The fitpoint is
// the median sample, a real observation rather than an average (the lower
// median for an even count), with its own local time.
//
// That local time is t_c − rtt/2, the client's time at which the reference
// read T_r, which is the instant the sample is the offset at. The notes pair
// the sample with t_c itself; that shifts the fitted line by slope × rtt/2,
// up to 4 ns at 200 ppm between the clocks and a 40 µs RTT.
func MeasureFitpoint(ctx context.Context, net Network, client, ref int, rtt int64, exchanges int) (timebase.Point, error) {
	if exchanges < 1 {
		return timebase.Point{}, fmt.Errorf("fitpoint %d->%d: %d exchanges: %w", client, ref, exchanges, ErrNoSamples)
	}
	if rtt < 0 {
		return timebase.Point{}, fmt.Errorf("fitpoint %d->%d: negative rtt %d", client, ref, rtt)
	}
	samples := make([]timebase.Point, 0, exchanges)
	for range exchanges {
		e, err := net.Exchange(ctx, client, ref)
		if err != nil {
			return timebase.Point{}, fmt.Errorf("fitpoint %d->%d: %w", client, ref, err)
		}
		samples = append(samples, timebase.Point{X: e.Recv - rtt/2, Offset: e.Recv - e.Remote - rtt/2})
	}
	slices.SortStableFunc(samples, func(a, b timebase.Point) int { return cmp.Compare(a.Offset, b.Offset) })
	return samples[(len(samples)-1)/2], nil
}

// FitMethod chooses how FitLine fits.
type FitMethod int

const (
	// LeastSquares is ordinary least squares (timebase.Fit).
	LeastSquares FitMethod = iota
	// TheilSen takes the median of the pairwise slopes and the median
	// intercept: robust to up to ~29 % outlying fitpoints.
	TheilSen
)

func (m FitMethod) String() string {
	switch m {
	case LeastSquares:
		return "least-squares"
	case TheilSen:
		return "theil-sen"
	}
	return fmt.Sprintf("FitMethod(%d)", int(m))
}

// FitLine fits a line through fitpoints and rejects it with ErrAbsurdSlope if
// |slope| > MaxSlope. The model's N, MeanX, ResidualNS and SlopeErr carry its
// uncertainty; for Theil–Sen they are the least-squares formulas applied to
// the robust line's residuals, an approximation.
func FitLine(points []timebase.Point, method FitMethod) (timebase.LinearModel, error) {
	fp := make([]finePoint, len(points))
	for i, p := range points {
		fp[i] = finePoint{X: p.X, Offset: float64(p.Offset)}
	}
	f, err := fitFine(fp, method)
	if err != nil {
		return timebase.LinearModel{}, err
	}
	return f.model(), nil
}

// MaxTheilSenPoints caps a Theil–Sen fit, which keeps all n(n−1)/2 pairwise
// slopes: 2,000 points are 2 million slopes, 16 MB.
const MaxTheilSenPoints = 2000

// OffsetEstimate is a client's offset from a reference (client − ref) at one
// instant of the client's clock.
type OffsetEstimate struct {
	At        int64 // client's local time the offset refers to (ns)
	Offset    int64 // client − ref at At (ns)
	HalfWidth int64 // the true offset lies within Offset ± HalfWidth, drift over the measurement aside
	Exchanges int   // ping-pongs used
	MinRTT    int64 // best RTT among them (ns)
}

// Model returns the offset as a timebase.LinearModel with slope s: the line
// through (At, Offset), whose FloorNS is the half-width. base, when it has
// N > 0, lends its slope error so that Uncertainty grows with the time since
// At.
func (o OffsetEstimate) Model(s float64, base timebase.LinearModel) timebase.LinearModel {
	m := timebase.LinearModel{Origin: o.At, Intercept: o.Offset, Slope: s, FloorNS: o.HalfWidth}
	if base.N > 0 {
		m.N, m.MeanX, m.SlopeErr = base.N, o.At, base.SlopeErr
	}
	return m
}

// SKaMPIConfig bounds SKaMPIOffset's ping-pongs.
type SKaMPIConfig struct {
	Min, Max int // at least Min ping-pongs, at most Max
	// BestRTT is the best RTT seen on the pair before (0: unknown). Without
	// it the measurement runs all Max ping-pongs, as SKaMPI does the first
	// time; RTTCache.Best supplies it for re-measurements.
	BestRTT int64
	// Slope is the client's known slope relative to ref, if any (HCA knows
	// it when it re-measures intercepts). Each ping-pong's interval is
	// carried along it to the time of the last ping-pong before the
	// intervals are intersected. Left 0, drift during the measurement is
	// ignored, which costs up to the relative drift times its duration
	// (200 ppm × 30 × 40 µs = 240 ns).
	Slope float64
}

// SKaMPIOffset measures client − ref with SKaMPI's interval method. Each
// ping-pong from client to ref brackets ref's reading Remote between the
// client's Send and Recv, so the offset lies in [Send − Remote, Recv − Remote];
// the intervals of successive ping-pongs are intersected, and the estimate is
// the midpoint of the intersection at the client's time of the last one.
//
// Early stop: when cfg.BestRTT is known, the measurement ends, after Min
// ping-pongs, as soon as a ping-pong's RTT is within 1.1 × the best RTT seen
// before it (BestRTT and this measurement's earlier ping-pongs; the
// ping-pong itself is not counted, or the rule would always fire). Without
// BestRTT all Max ping-pongs run and MinRTT becomes the pair's best.
func SKaMPIOffset(ctx context.Context, net Network, client, ref int, cfg SKaMPIConfig) (OffsetEstimate, error) {
	return skampiOffset(ctx, net, client, ref, cfg, nil)
}

// skampiOffset is SKaMPIOffset; if exact is not nil it also receives the
// unrounded offset at est.At (the intervals carried along cfg.Slope in
// floating point).
func skampiOffset(ctx context.Context, net Network, client, ref int, cfg SKaMPIConfig, exact *float64) (OffsetEstimate, error) {
	if cfg.Max < 1 || cfg.Min < 1 || cfg.Min > cfg.Max {
		return OffsetEstimate{}, fmt.Errorf("skampi %d->%d: ping-pongs min %d max %d: want 1 <= min <= max", client, ref, cfg.Min, cfg.Max)
	}
	// lo and hi bound the offset at the client's time x0, the midpoint of
	// the first ping-pong.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	loF, hiF := math.Inf(-1), math.Inf(1)
	var x0 int64
	best := cfg.BestRTT
	var est OffsetEstimate
	for i := range cfg.Max {
		e, err := net.Exchange(ctx, client, ref)
		if err != nil {
			return OffsetEstimate{}, fmt.Errorf("skampi %d->%d: ping-pong %d: %w", client, ref, i+1, err)
		}
		rtt := e.RTT()
		mid := e.Send + rtt/2
		if i == 0 {
			x0 = mid
		}
		backF := cfg.Slope * float64(mid-x0)
		back := int64(math.Round(backF))
		lo = max(lo, e.Send-e.Remote-back)
		hi = min(hi, e.Recv-e.Remote-back)
		loF = max(loF, float64(e.Send-e.Remote)-backF)
		hiF = min(hiF, float64(e.Recv-e.Remote)-backF)
		est.Exchanges = i + 1
		est.At = mid
		if i == 0 || rtt < est.MinRTT {
			est.MinRTT = rtt
		}
		stop := cfg.BestRTT > 0 && est.Exchanges >= cfg.Min && 10*rtt <= 11*best
		if best == 0 || rtt < best {
			best = rtt
		}
		if stop {
			break
		}
	}
	if lo > hi { // only by clock rounding or drift across the ping-pongs
		lo, hi = hi, lo
	}
	est.HalfWidth = (hi - lo + 1) / 2
	est.Offset = lo + (hi-lo)/2 + int64(math.Round(cfg.Slope*float64(est.At-x0)))
	if exact != nil {
		*exact = (loF+hiF)/2 + cfg.Slope*float64(est.At-x0)
	}
	return est, nil
}

// MinRTTOffset runs n ping-pongs from client to ref and takes the one with
// the smallest RTT: offset = midpoint of Send and Recv − Remote, uncertain
// by half that RTT.
func MinRTTOffset(ctx context.Context, net Network, client, ref, n int) (OffsetEstimate, error) {
	if n < 1 {
		return OffsetEstimate{}, fmt.Errorf("min-rtt offset %d->%d: %d exchanges: %w", client, ref, n, ErrNoSamples)
	}
	var bestE Exchange
	for i := range n {
		e, err := net.Exchange(ctx, client, ref)
		if err != nil {
			return OffsetEstimate{}, fmt.Errorf("min-rtt offset %d->%d: %w", client, ref, err)
		}
		if i == 0 || e.RTT() < bestE.RTT() {
			bestE = e
		}
	}
	rtt := bestE.RTT()
	mid := bestE.Send + rtt/2
	return OffsetEstimate{
		At:        mid,
		Offset:    mid - bestE.Remote,
		HalfWidth: rtt - rtt/2,
		Exchanges: n,
		MinRTT:    rtt,
	}, nil
}

func medianFloat(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return v[n/2-1]/2 + v[n/2]/2
}

// roundDiv is a/b rounded to nearest for b > 0.
func roundDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	if a >= 0 {
		return (a + b/2) / b
	}
	return -((-a + b/2) / b)
}

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
func fineRTT(r RTT) float64 {
	if r.MeanNS != 0 {
		return r.MeanNS
	}
	return float64(r.Mean)
}

// measureFitpointFine is MeasureFitpoint with sub-nanosecond samples
// t_c − T_r − rtt/2. The fitpoint keeps the reference's mean reading, so
// that mapPoints can carry it to the reference's global time later (HCA3).
func measureFitpointFine(ctx context.Context, net Network, client, ref int, rtt float64, exchanges int, filter FitpointFilter) (finePoint, error) {
	if exchanges < 1 {
		return finePoint{}, fmt.Errorf("fitpoint %d->%d: %d exchanges: %w", client, ref, exchanges, ErrNoSamples)
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
	least := slices.MinFunc(all, func(a, b Exchange) int { return cmp.Compare(a.RTT(), b.RTT()) }).RTT()
	var x0, r0 int64
	var sx, sy, sr float64
	var n int
	for _, e := range all {
		if e.RTT() > least+quantumWindowNS {
			continue
		}
		// Differences first: readings near 1e15 ns keep only 1/8 ns in a
		// float64.
		half := float64(e.RTT()) / 2
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

// FitpointFilter is how a fitpoint is taken from its exchanges.
type FitpointFilter int

// Fitpoint filters.
const (
	// MedianSample is Jones & Koenig's fitpoint: each exchange gives the
	// sample t_c − T_r − RTT/2 with the pair's mean RTT, and the median
	// sample is kept. It needs only the client's receive stamp (as over
	// MPI), but every sample carries the delay's jitter.
	MedianSample FitpointFilter = iota
	// MinRTTSample keeps the exchange with the shortest round trip and
	// takes the offset at its own midpoint, as NTP's clock filter does: the
	// exchange that queued least, whose one-way delays are nearest
	// symmetric. It needs both of the client's stamps, which every Network
	// here gives.
	MinRTTSample
)

func (f FitpointFilter) String() string {
	switch f {
	case MedianSample:
		return "median"
	case MinRTTSample:
		return "min-rtt"
	}
	return fmt.Sprintf("filter(%d)", int(f))
}

// ParseFitpointFilter is the inverse of String.
func ParseFitpointFilter(s string) (FitpointFilter, error) {
	for _, f := range []FitpointFilter{MedianSample, MinRTTSample} {
		if f.String() == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("fitpoint filter %q: want median or min-rtt", s)
}

// quantumWindowNS is how close to the median sample a fitpoint's samples
// must be to be averaged with it: the spread that nanosecond clock readings
// alone give a sample.
const quantumWindowNS = 2

// fitFine is FitLine over sub-nanosecond fitpoints; the intercept keeps its
// fraction.
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
	if math.Abs(f.Slope) > MaxSlope || math.IsNaN(f.Slope) {
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
	if n > MaxTheilSenPoints {
		return fine{}, fmt.Errorf("theil-sen over %d points: at most %d (it keeps all n²/2 slopes)", n, MaxTheilSenPoints)
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

// skampiFine is SKaMPIOffset that also returns the unrounded offset at
// est.At: the midpoint of the intervals, carried along cfg.Slope without
// rounding.
func skampiFine(ctx context.Context, net Network, client, ref int, cfg SKaMPIConfig) (OffsetEstimate, float64, error) {
	var exact float64
	est, err := skampiOffset(ctx, net, client, ref, cfg, &exact)
	return est, exact, err
}

// offsetFine is est as a fine model with slope s (OffsetEstimate.Model),
// its intercept the unrounded offset exact.
func offsetFine(est OffsetEstimate, exact, s float64, base timebase.LinearModel) fine {
	f := fine{LinearModel: est.Model(s, base)}
	f.Intercept = 0
	f.frac = exact
	return f.normalise()
}
