package hca

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/monagent/monagent/timebase"
)

// MaxSlope is the largest |slope| a fitted model may have (500 ppm). Crystal
// oscillators are within ±100 ppm of nominal, so a pair differs by at most
// ~200 ppm; a steeper fit means the measurement went wrong.
const MaxSlope = 500e-6

// ErrAbsurdSlope is returned (wrapped) for a fitted slope beyond ±MaxSlope.
// Algorithms count these rejections in Result.Rejected.
var ErrAbsurdSlope = errors.New("hca: absurd slope")

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
// which SKaMPIOffset uses for its early stop. Not safe for concurrent use.
type RTTCache struct {
	Warmup, N int // passed to MeasureRTT

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
	if r, ok := c.rtt[k]; ok {
		return r, nil
	}
	r, err := MeasureRTT(ctx, net, from, to, c.Warmup, c.N)
	if err != nil {
		return RTT{}, err
	}
	c.rtt[k] = r
	c.Observe(from, to, r.Min)
	return r, nil
}

// Best returns the smallest RTT seen on the pair, or 0 if none was.
func (c *RTTCache) Best(from, to int) int64 { return c.best[[2]int{from, to}] }

// Observe records an RTT seen on the pair by any measurement.
func (c *RTTCache) Observe(from, to int, rtt int64) {
	k := [2]int{from, to}
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
	var m timebase.LinearModel
	var err error
	switch method {
	case LeastSquares:
		m, err = timebase.Fit(points)
	case TheilSen:
		m, err = theilSen(points)
	default:
		return timebase.LinearModel{}, fmt.Errorf("fit line: unknown method %d", int(method))
	}
	if err != nil {
		return timebase.LinearModel{}, fmt.Errorf("fit line (%v): %w", method, err)
	}
	if math.Abs(m.Slope) > MaxSlope || math.IsNaN(m.Slope) {
		return timebase.LinearModel{}, fmt.Errorf("fit line (%v) over %d points: slope %.1f ppm: %w", method, len(points), m.Slope*1e6, ErrAbsurdSlope)
	}
	return m, nil
}

// MaxTheilSenPoints caps a Theil–Sen fit, which keeps all n(n−1)/2 pairwise
// slopes: 2,000 points are 2 million slopes, 16 MB.
const MaxTheilSenPoints = 2000

func theilSen(points []timebase.Point) (timebase.LinearModel, error) {
	n := len(points)
	if n < 2 {
		return timebase.LinearModel{}, fmt.Errorf("fit %d points: %w", n, timebase.ErrTooFewPoints)
	}
	if n > MaxTheilSenPoints {
		return timebase.LinearModel{}, fmt.Errorf("theil-sen over %d points: at most %d (it keeps all n²/2 slopes)", n, MaxTheilSenPoints)
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			dx := points[j].X - points[i].X
			if dx != 0 {
				slopes = append(slopes, float64(points[j].Offset-points[i].Offset)/float64(dx))
			}
		}
	}
	if len(slopes) == 0 {
		return timebase.LinearModel{}, fmt.Errorf("fit %d points at one local time: %w", n, timebase.ErrTooFewPoints)
	}
	s := medianFloat(slopes)
	// Arithmetic relative to the first point, as in timebase.Fit.
	x0 := points[0].X
	var sx float64
	for _, p := range points {
		sx += float64(p.X - x0)
	}
	mx := sx / float64(n)
	origin := x0
	for _, p := range points {
		if math.Abs(float64(p.X-x0)-mx) < math.Abs(float64(origin-x0)-mx) {
			origin = p.X
		}
	}
	icepts := make([]float64, n)
	for i, p := range points {
		icepts[i] = float64(p.Offset-points[0].Offset) - s*float64(p.X-origin)
	}
	m := timebase.LinearModel{
		Origin:    origin,
		Intercept: points[0].Offset + int64(math.Round(medianFloat(slices.Clone(icepts)))),
		Slope:     s,
		N:         n,
		MeanX:     x0 + int64(math.Round(mx)),
	}
	if n > 2 {
		var sse, sxx float64
		for _, p := range points {
			r := float64(p.Offset-m.Intercept) - s*float64(p.X-origin)
			sse += r * r
			dx := float64(p.X-x0) - mx
			sxx += dx * dx
		}
		m.ResidualNS = math.Sqrt(sse / float64(n-2))
		if sxx > 0 {
			m.SlopeErr = m.ResidualNS / math.Sqrt(sxx)
		}
	}
	return m, nil
}

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
	if cfg.Max < 1 || cfg.Min < 1 || cfg.Min > cfg.Max {
		return OffsetEstimate{}, fmt.Errorf("skampi %d->%d: ping-pongs min %d max %d: want 1 <= min <= max", client, ref, cfg.Min, cfg.Max)
	}
	// lo and hi bound the offset at the client's time x0, the midpoint of
	// the first ping-pong.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
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
		back := int64(math.Round(cfg.Slope * float64(mid-x0)))
		lo = max(lo, e.Send-e.Remote-back)
		hi = min(hi, e.Recv-e.Remote-back)
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
