package stats

import (
	"fmt"
	"math"
)

// CDFPoint is one step of an empirical CDF: the fraction F of samples <= X.
type CDFPoint struct {
	X float64 // ns
	F float64 // in (0, 1]
}

// CDF returns the empirical distribution function as points for plotting,
// at most maxPoints of them (>= 2). In exact mode there is one point per
// distinct sample value; in histogram mode one per non-empty bucket, at the
// largest value the bucket holds (clamped to the maximum), so X is high by
// at most 1/256 of |X|. When there are more points than maxPoints, points
// evenly spaced in F are kept, always including the last (F = 1).
func (a *Accumulator) CDF(maxPoints int) ([]CDFPoint, error) {
	if a.n == 0 {
		return nil, fmt.Errorf("stats: cdf: %w", ErrEmpty)
	}
	if maxPoints < 2 {
		return nil, fmt.Errorf("stats: cdf: maxPoints %d, want >= 2", maxPoints)
	}
	var pts []CDFPoint
	n := float64(a.n)
	if a.hist == nil {
		a.sort()
		for i, x := range a.exact {
			if i+1 < len(a.exact) && a.exact[i+1] == x {
				continue
			}
			pts = append(pts, CDFPoint{X: float64(x), F: float64(i+1) / n})
		}
	} else {
		var cum int64
		a.hist.walk(func(_, _, hi float64, c int64) bool {
			cum += c
			pts = append(pts, CDFPoint{X: min(hi, float64(a.max)), F: float64(cum) / n})
			return true
		})
	}
	if len(pts) <= maxPoints {
		return pts, nil
	}
	out := make([]CDFPoint, 0, maxPoints)
	next := 1.0 / float64(maxPoints)
	for i, p := range pts {
		if p.F >= next || i == len(pts)-1 {
			out = append(out, p)
			for next <= p.F {
				next += 1.0 / float64(maxPoints)
			}
		}
	}
	return out, nil
}

// Histogram is a histogram of equal-width bins with a normal distribution
// fitted to the samples (mean and sample standard deviation).
type Histogram struct {
	Edges  []float64 // ns, len(Counts)+1, from Min to Max (widened by 0.5 ns when Min == Max)
	Counts []int64
	Mu     float64 // ns, the fitted normal's mean
	Sigma  float64 // ns, its standard deviation
	N      int64
	// Expected is the count the fitted normal puts in each bin:
	// N (Phi((hi-Mu)/Sigma) - Phi((lo-Mu)/Sigma)); with Sigma == 0 all N
	// go to the bin holding Mu.
	Expected []float64
}

// Density returns the fitted normal's pdf at x scaled to counts per bin
// (N * bin width * pdf), for drawing the smooth curve over the bars.
func (h Histogram) Density(x float64) float64 {
	if h.Sigma == 0 || len(h.Counts) == 0 {
		return 0
	}
	w := (h.Edges[len(h.Edges)-1] - h.Edges[0]) / float64(len(h.Counts))
	z := (x - h.Mu) / h.Sigma
	return float64(h.N) * w * math.Exp(-z*z/2) / (h.Sigma * math.Sqrt(2*math.Pi))
}

// Histogram returns a histogram of the samples in bins equal-width bins
// between the minimum and the maximum; a sample on an inner edge goes to
// the bin above it, the maximum to the last bin. In histogram mode each
// bucket's count goes to the bin of its midpoint (clamped to [Min, Max]),
// so a sample may land one bin off when bins are narrower than 1/256 of
// its magnitude.
func (a *Accumulator) Histogram(bins int) (Histogram, error) {
	if a.n == 0 {
		return Histogram{}, fmt.Errorf("stats: histogram: %w", ErrEmpty)
	}
	if bins < 1 {
		return Histogram{}, fmt.Errorf("stats: histogram: %d bins, want >= 1", bins)
	}
	lo, hi := float64(a.min), float64(a.max)
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	w := (hi - lo) / float64(bins)
	h := Histogram{
		Edges:    make([]float64, bins+1),
		Counts:   make([]int64, bins),
		Expected: make([]float64, bins),
		Mu:       a.mean,
		N:        a.n,
	}
	if a.n > 1 {
		h.Sigma = math.Sqrt(a.m2 / float64(a.n-1))
	}
	for i := range h.Edges {
		h.Edges[i] = lo + float64(i)*w
	}
	h.Edges[bins] = hi
	bin := func(x float64) int {
		i := int(math.Floor((x - lo) / w))
		return min(max(i, 0), bins-1)
	}
	if a.hist == nil {
		for _, x := range a.exact {
			h.Counts[bin(float64(x))]++
		}
	} else {
		a.hist.walk(func(mid, _, _ float64, c int64) bool {
			h.Counts[bin(min(max(mid, float64(a.min)), float64(a.max)))] += c
			return true
		})
	}
	if h.Sigma == 0 {
		h.Expected[bin(h.Mu)] = float64(h.N)
		return h, nil
	}
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-(x-h.Mu)/(h.Sigma*math.Sqrt2)) }
	for i := range h.Expected {
		h.Expected[i] = float64(h.N) * (phi(h.Edges[i+1]) - phi(h.Edges[i]))
	}
	return h, nil
}
