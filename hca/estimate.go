package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/monagent/monagent/timebase"
)

// maxSlope is the largest |slope| a fitted model may have (500 ppm). Crystal
// oscillators are within ±100 ppm of nominal, so a pair differs by at most
// ~200 ppm; a steeper fit means the measurement went wrong.
const maxSlope = 500e-6

// ErrAbsurdSlope is returned (wrapped) for a fitted slope beyond ±maxSlope.
// Algorithms count these rejections in Result.Rejected.
var ErrAbsurdSlope = errors.New("hca: absurd slope")

// ErrScattered is returned (wrapped) for a fit whose fitpoints scatter about
// their line far more than the pair's round trips allow: a clock stepped
// during the measurement, or a link that changed its delay, bends a line
// without steepening it beyond maxSlope. Algorithms count these rejections
// in Result.Rejected, as they do absurd slopes, and re-measure the pair.
var ErrScattered = errors.New("hca: fitpoints scattered (a clock step?)")

// minScatterLimitNS is the least RMS scatter of a fit's fitpoints about
// its line that counts as scattered (ErrScattered), whatever the pair's
// round trips: a fitpoint is the shortest of its exchanges, and on any LAN
// they scatter by well under a microsecond.
const minScatterLimitNS = 10_000

// scatterLimit is the RMS scatter beyond which a pair's fit is rejected:
// 20 times the bound on its fitpoints' bias from the RTT spread
// (fitpointBias), and at least minScatterLimitNS.
func scatterLimit(bias int64) float64 {
	return max(minScatterLimitNS, 20*float64(bias))
}

// errNoSamples is returned when an estimate has nothing to work on.
var errNoSamples = errors.New("hca: no samples")

// FitMethod chooses how a line is fitted through fitpoints.
type FitMethod int

const (
	// LeastSquares is ordinary least squares (timebase.Fit).
	LeastSquares FitMethod = iota
	// TheilSen takes the median of the pairwise slopes and the median
	// intercept: robust to up to ~29 % outlying fitpoints.
	TheilSen
)

var fitMethodNames = [...]string{LeastSquares: "least-squares", TheilSen: "theil-sen"}

func (m FitMethod) String() string {
	if m >= 0 && int(m) < len(fitMethodNames) {
		return fitMethodNames[m]
	}
	return fmt.Sprintf("FitMethod(%d)", int(m))
}

// maxTheilSenPoints caps a Theil–Sen fit, which keeps all n(n−1)/2 pairwise
// slopes: 2,000 points are 2 million slopes, 16 MB.
const maxTheilSenPoints = 2000

// offsetEstimate is a client's offset from a reference (client − ref) at one
// instant of the client's clock.
type offsetEstimate struct {
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
func (o offsetEstimate) Model(s float64, base timebase.LinearModel) timebase.LinearModel {
	m := timebase.LinearModel{Origin: o.At, Intercept: o.Offset, Slope: s, FloorNS: o.HalfWidth}
	if base.N > 0 {
		m.N, m.MeanX, m.SlopeErr = base.N, o.At, base.SlopeErr
	}
	return m
}

// skampiConfig bounds skampiOffset's ping-pongs.
type skampiConfig struct {
	Min, Max int // at least Min ping-pongs, at most Max
	// BestRTT is the best RTT seen on the pair before (0: unknown). Without
	// it the measurement runs all Max ping-pongs, as SKaMPI does the first
	// time; rttCache.Best supplies it for re-measurements.
	BestRTT int64
	// Slope is the client's known slope relative to ref, if any (HCA knows
	// it when it re-measures intercepts). Each ping-pong's interval is
	// carried along it to the time of the last ping-pong before the
	// intervals are intersected. Left 0, drift during the measurement is
	// ignored, which costs up to the relative drift times its duration
	// (200 ppm × 30 × 40 µs = 240 ns).
	Slope float64
}

// skampiOffset measures client − ref with SKaMPI's interval method. Each
// ping-pong from client to ref brackets ref's reading Remote between the
// client's Send and Recv, so the offset lies in [Send − Remote, Recv − Remote];
// the intervals of successive ping-pongs are intersected, and the estimate is
// the midpoint of the intersection at the client's time of the last one.
//
// A ping-pong lost on every try is left out, up to half of Max
// (lossBudget); the intervals of the others bound the offset as well.
//
// Early stop: when cfg.BestRTT is known, the measurement ends, after Min
// ping-pongs, as soon as a ping-pong's RTT is within 1.1 × the best RTT seen
// before it (BestRTT and this measurement's earlier ping-pongs; the
// ping-pong itself is not counted, or the rule would always fire). Without
// BestRTT all Max ping-pongs run and MinRTT becomes the pair's best.
// If exact is not nil it also receives the unrounded offset at est.At
// (the intervals carried along cfg.Slope in floating point).
func skampiOffset(ctx context.Context, net Network, client, ref int, cfg skampiConfig, exact *float64) (offsetEstimate, error) {
	if cfg.Max < 1 || cfg.Min < 1 || cfg.Min > cfg.Max {
		return offsetEstimate{}, fmt.Errorf("skampi %d->%d: ping-pongs min %d max %d: want 1 <= min <= max", client, ref, cfg.Min, cfg.Max)
	}
	// lo and hi bound the offset at the client's time x0, the midpoint of
	// the first ping-pong.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	loF, hiF := math.Inf(-1), math.Inf(1)
	var x0 int64
	best := cfg.BestRTT
	var est offsetEstimate
	b := newLossBudget(cfg.Max)
	for i := range cfg.Max {
		e, err := net.Exchange(ctx, client, ref)
		if err != nil {
			if b.skip(err) {
				continue
			}
			return offsetEstimate{}, fmt.Errorf("skampi %d->%d: ping-pong %d: %w", client, ref, i+1, b.exceeded(cfg.Max, err))
		}
		rtt := e.rtt()
		mid := e.Send + rtt/2
		first := est.Exchanges == 0
		if first {
			x0 = mid
		}
		backF := cfg.Slope * float64(mid-x0)
		back := int64(math.Round(backF))
		lo = max(lo, e.Send-e.Remote-back)
		hi = min(hi, e.Recv-e.Remote-back)
		loF = max(loF, float64(e.Send-e.Remote)-backF)
		hiF = min(hiF, float64(e.Recv-e.Remote)-backF)
		est.Exchanges++
		est.At = mid
		if first || rtt < est.MinRTT {
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
	if est.Exchanges == 0 { // never: the budget leaves out fewer than Max
		return offsetEstimate{}, fmt.Errorf("skampi %d->%d: no ping-pong: %w", client, ref, errNoSamples)
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

// minRTTOffset runs n ping-pongs from client to ref and takes the one with
// the smallest RTT: offset = midpoint of Send and Recv − Remote, uncertain
// by half that RTT. Up to half of them, lost on every try, are left out.
func minRTTOffset(ctx context.Context, net Network, client, ref, n int) (offsetEstimate, error) {
	if n < 1 {
		return offsetEstimate{}, fmt.Errorf("min-rtt offset %d->%d: %d exchanges: %w", client, ref, n, errNoSamples)
	}
	var bestE Exchange
	used := 0
	b := newLossBudget(n)
	for range n {
		e, err := net.Exchange(ctx, client, ref)
		if err != nil {
			if b.skip(err) {
				continue
			}
			return offsetEstimate{}, fmt.Errorf("min-rtt offset %d->%d: %w", client, ref, b.exceeded(n, err))
		}
		if used == 0 || e.rtt() < bestE.rtt() {
			bestE = e
		}
		used++
	}
	if used == 0 {
		return offsetEstimate{}, fmt.Errorf("min-rtt offset %d->%d: %w", client, ref, errNoSamples)
	}
	rtt := bestE.rtt()
	mid := bestE.Send + rtt/2
	return offsetEstimate{
		At:        mid,
		Offset:    mid - bestE.Remote,
		HalfWidth: rtt - rtt/2,
		Exchanges: used,
		MinRTT:    rtt,
	}, nil
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

// fitpointFilterNames are the filters' names, by value: String and
// ParseFitpointFilter.
var fitpointFilterNames = []string{MedianSample: "median", MinRTTSample: "min-rtt"}

func (f FitpointFilter) String() string {
	if f >= 0 && int(f) < len(fitpointFilterNames) {
		return fitpointFilterNames[f]
	}
	return fmt.Sprintf("filter(%d)", int(f))
}

// ParseFitpointFilter is the inverse of String.
func ParseFitpointFilter(s string) (FitpointFilter, error) {
	if i := slices.Index(fitpointFilterNames, s); i >= 0 {
		return FitpointFilter(i), nil
	}
	return 0, fmt.Errorf("fitpoint filter %q: want median or min-rtt", s)
}
