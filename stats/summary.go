package stats

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// DefaultExactLimit is the number of samples an Accumulator keeps for exact
// percentiles when Config.ExactLimit is 0: 131072 samples, 1 MiB, more than
// a day of 1 Hz samples.
const DefaultExactLimit = 1 << 17

// HistogramRelErr bounds the relative error of a percentile in histogram
// mode: 1/512 of the larger magnitude of the two order statistics it
// interpolates.
const HistogramRelErr = 1.0 / 512

// DefaultProbabilities returns the probabilities of the percentiles
// reported when Config.Probabilities is nil: p50, p75, p95, p99, p99.9.
func DefaultProbabilities() []float64 { return []float64{0.5, 0.75, 0.95, 0.99, 0.999} }

// Config configures an Accumulator. The zero value is usable.
type Config struct {
	// ExactLimit is the number of samples kept for exact percentiles; past
	// it the accumulator switches to its bounded histogram. 0 means
	// DefaultExactLimit; a negative value means histogram mode from the
	// first sample.
	ExactLimit int
	// Probabilities of the reported percentiles, each in [0, 1]. nil means
	// DefaultProbabilities().
	Probabilities []float64
	// Bounds (ns, >= 0) for Summary.Shares: the share of samples with
	// |x| <= bound.
	Bounds []int64
}

// Quantile is one percentile of a Summary.
type Quantile struct {
	P     float64 // probability in [0, 1]
	Value float64 // ns
}

// Share is the fraction of samples with |x| <= Bound.
type Share struct {
	Bound    int64 // ns
	Count    int64
	Fraction float64
}

// Summary is the result of an Accumulator.
type Summary struct {
	N      int64
	Mean   float64 // ns; the study's accuracy
	Std    float64 // ns, sample (n-1) standard deviation; the study's precision; 0 when N == 1
	RMS    float64 // ns, sqrt(mean(x^2))
	Min    int64   // ns
	Max    int64   // ns
	MaxAbs uint64  // ns, max |x| (uint64: |math.MinInt64| does not fit int64)

	Percentiles    []Quantile // of x, type 7, for Config.Probabilities
	AbsPercentiles []Quantile // of |x|, type 7, same probabilities
	Shares         []Share    // for Config.Bounds, exact in both modes

	Exact     bool    // percentiles are exact type 7 values
	MaxRelErr float64 // 0 when Exact, else HistogramRelErr
}

// Accumulator collects int64 samples (ns) and summarises them in bounded
// memory; see the package documentation for the two modes. It is not safe
// for concurrent use.
type Accumulator struct {
	limit  int
	probs  []float64
	bounds []int64
	within []int64

	n        int64
	mean, m2 float64
	min, max int64
	maxAbs   uint64
	minAbs   uint64

	exact  []int64 // samples while in exact mode
	sorted bool
	hist   *logHist // non-nil in histogram mode
}

// NewAccumulator returns an empty Accumulator. It fails for a probability
// outside [0, 1] or a negative bound.
func NewAccumulator(cfg Config) (*Accumulator, error) {
	probs := cfg.Probabilities
	if probs == nil {
		probs = DefaultProbabilities()
	}
	for i, p := range probs {
		if !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("stats: probability %d is %v, want [0, 1]", i, p)
		}
	}
	for i, b := range cfg.Bounds {
		if b < 0 {
			return nil, fmt.Errorf("stats: bound %d is %d ns, want >= 0", i, b)
		}
	}
	a := &Accumulator{
		limit:  cfg.ExactLimit,
		probs:  slices.Clone(probs),
		bounds: slices.Clone(cfg.Bounds),
		within: make([]int64, len(cfg.Bounds)),
		minAbs: math.MaxUint64,
	}
	if a.limit == 0 {
		a.limit = DefaultExactLimit
	}
	if a.limit < 0 {
		a.limit = 0
		a.hist = new(logHist)
	}
	return a, nil
}

// Summarize summarises xs with a new Accumulator configured by cfg.
func Summarize(xs []int64, cfg Config) (Summary, error) {
	a, err := NewAccumulator(cfg)
	if err != nil {
		return Summary{}, err
	}
	a.AddSlice(xs)
	return a.Summary()
}

// N returns the number of samples added.
func (a *Accumulator) N() int64 { return a.n }

// AddSlice adds every sample of xs.
func (a *Accumulator) AddSlice(xs []int64) {
	for _, x := range xs {
		a.Add(x)
	}
}

// Add adds one sample (ns).
func (a *Accumulator) Add(x int64) {
	a.n++
	f := float64(x)
	d := f - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (f - a.mean)
	if a.n == 1 || x < a.min {
		a.min = x
	}
	if a.n == 1 || x > a.max {
		a.max = x
	}
	m := absU(x)
	if m > a.maxAbs {
		a.maxAbs = m
	}
	if m < a.minAbs {
		a.minAbs = m
	}
	for i, b := range a.bounds {
		if m <= uint64(b) {
			a.within[i]++
		}
	}
	if a.hist != nil {
		a.hist.add(x)
		return
	}
	if len(a.exact) < a.limit {
		if len(a.exact) == cap(a.exact) {
			// Grow without overshooting the limit.
			c := min(max(2*cap(a.exact), 1024), a.limit)
			grown := make([]int64, len(a.exact), c)
			copy(grown, a.exact)
			a.exact = grown
		}
		a.exact = append(a.exact, x)
		a.sorted = false
		return
	}
	a.hist = new(logHist)
	for _, v := range a.exact {
		a.hist.add(v)
	}
	a.exact = nil
	a.hist.add(x)
}

// Exact reports whether the accumulator still holds every sample.
func (a *Accumulator) Exact() bool { return a.hist == nil }

func (a *Accumulator) sort() {
	if !a.sorted {
		slices.Sort(a.exact)
		a.sorted = true
	}
}

// Summary returns the statistics of the samples added so far. It fails with
// ErrEmpty when there are none. Adding more samples afterwards is allowed.
func (a *Accumulator) Summary() (Summary, error) {
	if a.n == 0 {
		return Summary{}, fmt.Errorf("stats: summary: %w", ErrEmpty)
	}
	s := Summary{
		N:      a.n,
		Mean:   a.mean,
		Min:    a.min,
		Max:    a.max,
		MaxAbs: a.maxAbs,
		Exact:  a.hist == nil,
	}
	if a.n > 1 {
		s.Std = math.Sqrt(a.m2 / float64(a.n-1))
	}
	s.RMS = math.Sqrt(a.mean*a.mean + a.m2/float64(a.n))
	if !s.Exact {
		s.MaxRelErr = HistogramRelErr
	}
	a.sort()
	abs := a.absOrderStat()
	for _, p := range a.probs {
		s.Percentiles = append(s.Percentiles, Quantile{P: p, Value: type7(p, a.n, a.orderStat)})
		s.AbsPercentiles = append(s.AbsPercentiles, Quantile{P: p, Value: type7(p, a.n, abs)})
	}
	for i, b := range a.bounds {
		s.Shares = append(s.Shares, Share{Bound: b, Count: a.within[i], Fraction: float64(a.within[i]) / float64(a.n)})
	}
	return s, nil
}

// Quantile returns the type 7 quantile of the samples for probability p in
// [0, 1], with the error bound of the current mode.
func (a *Accumulator) Quantile(p float64) (float64, error) {
	if a.n == 0 {
		return 0, fmt.Errorf("stats: quantile: %w", ErrEmpty)
	}
	if !(p >= 0 && p <= 1) {
		return 0, fmt.Errorf("stats: quantile: probability %v, want [0, 1]", p)
	}
	a.sort()
	return type7(p, a.n, a.orderStat), nil
}

// type7 interpolates between order statistics k and k+1 (0-based).
func type7(p float64, n int64, stat func(k int64) float64) float64 {
	h := float64(n-1) * p
	k := int64(math.Floor(h))
	if k >= n-1 {
		return stat(n - 1)
	}
	lo := stat(k)
	f := h - float64(k)
	if f == 0 {
		return lo
	}
	hi := stat(k + 1)
	return min(max(lo+f*(hi-lo), lo), hi) // clamp rounding at extreme magnitudes
}

// orderStat returns the k-th smallest sample (0-based); exact mode needs
// a.sort() first.
func (a *Accumulator) orderStat(k int64) float64 {
	if a.hist == nil {
		return float64(a.exact[k])
	}
	return a.histOrderStat(k, float64(a.min), float64(a.max), a.hist.orderStat)
}

// histOrderStat is the k-th smallest of the n samples that lie in [lo, hi]
// from the histogram's estimate est: exact at both ends, clamped between.
func (a *Accumulator) histOrderStat(k int64, lo, hi float64, est func(int64) float64) float64 {
	if k == 0 {
		return lo
	}
	if k == a.n-1 {
		return hi
	}
	return min(max(est(k), lo), hi)
}

// absOrderStat returns a function giving the k-th smallest |x|.
func (a *Accumulator) absOrderStat() func(k int64) float64 {
	if a.hist != nil {
		return func(k int64) float64 {
			return a.histOrderStat(k, float64(a.minAbs), float64(a.maxAbs), a.hist.absOrderStat)
		}
	}
	// Merge outwards from zero: negatives walk down, non-negatives up.
	xs := a.exact
	z, _ := slices.BinarySearch(xs, 0)
	abs := make([]uint64, 0, len(xs))
	i, j := z-1, z
	for i >= 0 || j < len(xs) {
		if j >= len(xs) || (i >= 0 && absU(xs[i]) < absU(xs[j])) {
			abs = append(abs, absU(xs[i]))
			i--
		} else {
			abs = append(abs, absU(xs[j]))
			j++
		}
	}
	return func(k int64) float64 { return float64(abs[k]) }
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-(x + 1)) + 1
	}
	return uint64(x)
}

// logHist counts int64 values in buckets of |x|, exact below 2*sub and 256
// buckets per power of two above: bucket width / lower edge <= 1/256.
type logHist struct {
	pos [histBuckets]int64 // x >= 0
	neg [histBuckets]int64 // x < 0
}

const (
	histSubBits = 8
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub // 14592
)

func histIndex(m uint64) int {
	shift := bits.Len64(m) - (histSubBits + 1)
	if shift < 0 {
		shift = 0
	}
	return shift*histSub + int(m>>uint(shift))
}

// histBucket returns the smallest magnitude of bucket i and its width.
func histBucket(i int) (lo uint64, width uint64) {
	if i < 2*histSub {
		return uint64(i), 1
	}
	shift := i/histSub - 1
	mant := uint64(i - shift*histSub)
	return mant << uint(shift), 1 << uint(shift)
}

// histMid returns the midpoint of the integers in bucket i.
func histMid(i int) float64 {
	lo, w := histBucket(i)
	return float64(lo) + float64(w-1)/2
}

func (h *logHist) add(x int64) {
	if x < 0 {
		h.neg[histIndex(absU(x))]++
	} else {
		h.pos[histIndex(uint64(x))]++
	}
}

// walk calls f for each non-empty bucket in increasing order of value with
// the bucket's midpoint value and count; it stops when f returns false.
func (h *logHist) walk(f func(mid float64, lo, hi float64, c int64) bool) {
	for i := histBuckets - 1; i >= 0; i-- {
		if c := h.neg[i]; c > 0 {
			lo, w := histBucket(i)
			if !f(-histMid(i), -(float64(lo) + float64(w-1)), -float64(lo), c) {
				return
			}
		}
	}
	for i := 0; i < histBuckets; i++ {
		if c := h.pos[i]; c > 0 {
			lo, w := histBucket(i)
			if !f(histMid(i), float64(lo), float64(lo)+float64(w-1), c) {
				return
			}
		}
	}
}

func (h *logHist) orderStat(k int64) float64 {
	var cum int64
	var v float64
	h.walk(func(mid, _, _ float64, c int64) bool {
		cum += c
		v = mid
		return cum <= k
	})
	return v
}

func (h *logHist) absOrderStat(k int64) float64 {
	var cum int64
	for i := 0; i < histBuckets; i++ {
		cum += h.pos[i] + h.neg[i]
		if cum > k {
			return histMid(i)
		}
	}
	return histMid(histBuckets - 1)
}
