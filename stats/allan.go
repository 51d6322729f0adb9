package stats

import (
	"fmt"
	"math"
)

// Phase is the element type of a phase series: time error in ns, as int64
// or as float64 (which must be finite).
type Phase interface{ ~int64 | ~float64 }

// Deviation is one point of a stability curve.
type Deviation struct {
	M     int     // averaging factor
	Tau   int64   // ns, M * tau0
	Value float64 // ADEV, MDEV: dimensionless; TDEV, MTIE: ns
	N     int     // number of terms of the estimator's outer sum
}

// TauSeconds returns Tau in seconds, for display.
func (d Deviation) TauSeconds() float64 { return float64(d.Tau) / 1e9 }

// ADev returns the overlapping Allan deviation of phase data x (ns) sampled
// every tau0 ns, for averaging factors ms (nil: octaves) as SP 1065 defines it.
// Taus needing more than len(x) points (N >= 2m+1) are omitted.
func ADev[T Phase](x []T, tau0 int64, ms []int) ([]Deviation, error) {
	return deviations("adev", x, tau0, ms, 2, func(m int) (float64, int) {
		n := len(x) - 2*m
		var s float64
		for i := range n {
			d := float64(x[i+2*m]) - 2*float64(x[i+m]) + float64(x[i])
			s += d * d
		}
		tau := float64(m) * float64(tau0)
		return math.Sqrt(s / (2 * float64(n) * tau * tau)), n
	})
}

// MDev returns the modified Allan deviation of phase data x (ns) sampled
// every tau0 ns, for averaging factors ms (nil: octaves) as SP 1065 defines it.
// Taus needing more than len(x) points (N >= 3m) are omitted.
func MDev[T Phase](x []T, tau0 int64, ms []int) ([]Deviation, error) {
	return deviations("mdev", x, tau0, ms, 3, func(m int) (float64, int) {
		s, n := modSum(x, m)
		tau := float64(m) * float64(tau0)
		fm := float64(m)
		return math.Sqrt(s / (2 * fm * fm * tau * tau * float64(n))), n
	})
}

// TDev returns the time deviation of phase data x (ns) sampled every tau0
// ns, tau MDEV(tau)/sqrt(3) in ns as SP 1065 defines it, for averaging factors
// ms (nil: octaves). Taus needing more than len(x) points (N >= 3m) are
// omitted.
func TDev[T Phase](x []T, tau0 int64, ms []int) ([]Deviation, error) {
	return deviations("tdev", x, tau0, ms, 3, func(m int) (float64, int) {
		s, n := modSum(x, m)
		fm := float64(m)
		return math.Sqrt(s / (6 * fm * fm * float64(n))), n
	})
}

// modSum returns sum_j (sum_{i=j}^{j+m-1} d(i))^2 and its number of terms
// N-3m+1. The inner sum slides; it is recomputed from scratch every m
// steps so rounding does not accumulate over long series.
func modSum[T Phase](x []T, m int) (float64, int) {
	d := func(i int) float64 { return float64(x[i+2*m]) - 2*float64(x[i+m]) + float64(x[i]) }
	n := len(x) - 3*m + 1
	var s, w float64
	for j := range n {
		if j%m == 0 {
			w = 0
			for i := j; i < j+m; i++ {
				w += d(i)
			}
		} else {
			w += d(j+m-1) - d(j-1)
		}
		s += w * w
	}
	return s, n
}

// MTIE returns the maximum time interval error of phase data x (ns) sampled
// every tau0 ns: for each tau = m tau0 the largest peak-to-peak x over any
// window of m+1 consecutive points (SP 1065), in ns. It uses
// monotone deques, O(N) per tau. Taus needing more than len(x) points
// (N >= m+1) are omitted.
func MTIE[T Phase](x []T, tau0 int64, ms []int) ([]Deviation, error) {
	var hiBuf, loBuf []int // reused between taus
	return deviations("mtie", x, tau0, ms, 1, func(m int) (float64, int) {
		// hi[hh:] holds indices of a decreasing run of x (window maxima
		// candidates), lo[lh:] of an increasing run. Popped front slots
		// are reclaimed by compaction once they are half the slice, so
		// memory stays within about twice the longest run.
		hi, lo := hiBuf[:0], loBuf[:0]
		hh, lh := 0, 0
		var worst float64
		for i, v := range x {
			for len(hi) > hh && x[hi[len(hi)-1]] <= v {
				hi = hi[:len(hi)-1]
			}
			if hh > 0 && hh >= len(hi)/2 && len(hi) == cap(hi) {
				hi, hh = hi[:copy(hi, hi[hh:])], 0
			}
			hi = append(hi, i)
			for len(lo) > lh && x[lo[len(lo)-1]] >= v {
				lo = lo[:len(lo)-1]
			}
			if lh > 0 && lh >= len(lo)/2 && len(lo) == cap(lo) {
				lo, lh = lo[:copy(lo, lo[lh:])], 0
			}
			lo = append(lo, i)
			if i < m {
				continue
			}
			k := i - m // window [k, i]
			if hi[hh] < k {
				hh++
			}
			if lo[lh] < k {
				lh++
			}
			if d := float64(x[hi[hh]]) - float64(x[lo[lh]]); d > worst {
				worst = d
			}
		}
		hiBuf, loBuf = hi, lo
		return worst, len(x) - m
	})
}

// deviations validates the input and evaluates f for each usable m: one
// needing at most len(x) points, k*m+1 (k = 1, 2) or 3m (k = 3).
func deviations[T Phase](name string, x []T, tau0 int64, ms []int, k int, f func(m int) (float64, int)) ([]Deviation, error) {
	if tau0 <= 0 {
		return nil, fmt.Errorf("stats: %s: tau0 %d ns, want > 0", name, tau0)
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("stats: %s: %w", name, ErrEmpty)
	}
	for i, v := range x {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("stats: %s: phase %d is %v: %w", name, i, f, ErrNotFinite)
		}
	}
	for i, m := range ms {
		if m < 1 {
			return nil, fmt.Errorf("stats: %s: averaging factor %d is %d, want >= 1", name, i, m)
		}
	}
	need := func(m int) int {
		if k == 3 {
			return 3 * m
		}
		return k*m + 1
	}
	fits := func(m int) bool {
		return m <= len(x) && need(m) <= len(x) && int64(m) <= math.MaxInt64/tau0
	}
	if ms == nil {
		for m := 1; fits(m); m *= 2 {
			ms = append(ms, m)
		}
	}
	var out []Deviation
	for _, m := range ms {
		if !fits(m) {
			continue
		}
		v, n := f(m)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("stats: %s: m %d: result overflows float64: %w", name, m, ErrNotFinite)
		}
		out = append(out, Deviation{M: m, Tau: int64(m) * tau0, Value: v, N: n})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("stats: %s: %d points, the shortest tau needs %d: %w", name, len(x), need(max(1, minPos(ms))), ErrTooShort)
	}
	return out, nil
}

func minPos(ms []int) int {
	if len(ms) == 0 {
		return 1
	}
	m := ms[0]
	for _, v := range ms {
		m = min(m, v)
	}
	return m
}

// FrequencyToPhase converts fractional frequency data y to phase (ns) as SP
// 1065 does: x(0) = 0, x(i+1) = x(i) + y(i) tau0, so len(x) = len(y)+1. It
// fails on NaN or infinite y.
func FrequencyToPhase(y []float64, tau0 int64) ([]float64, error) {
	if tau0 <= 0 {
		return nil, fmt.Errorf("stats: frequency to phase: tau0 %d ns, want > 0", tau0)
	}
	x := make([]float64, len(y)+1)
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("stats: frequency to phase: frequency %d is %v: %w", i, v, ErrNotFinite)
		}
		x[i+1] = x[i] + v*float64(tau0)
	}
	return x, nil
}
