package stats

import (
	"errors"
	"fmt"
	"math"
)

// ErrNoSpread is returned by FitLine when the explanatory variable does
// not vary (a constant temperature): every slope fits it equally well.
var ErrNoSpread = errors.New("the explanatory variable does not vary")

// Line is an ordinary least-squares fit y = Intercept + Slope (x - XMean)
// of pairs (x, y), with the slope's standard error and its two-sided 95 %
// confidence interval Slope -+ t(0.975, N-2) SlopeSE. The interval assumes
// independent residuals; residuals correlated in time (a random walk of a
// clock's frequency) make it too narrow.
type Line struct {
	N         int
	Slope     float64 // y per unit of x
	Intercept float64 // fitted y at XMean
	SlopeSE   float64
	SlopeLow  float64 // 95 % confidence interval of Slope
	SlopeHigh float64
	// R is Pearson's correlation coefficient of x and y (0 when y is
	// constant).
	R           float64
	ResidualStd float64 // sqrt(sum of squared residuals / (N-2))
	XMean       float64
	XMin, XMax  float64
}

// At returns the fitted y at x.
func (l Line) At(x float64) float64 { return l.Intercept + l.Slope*(x-l.XMean) }

// Significant reports whether the 95 % confidence interval of the slope
// excludes 0.
func (l Line) Significant() bool { return l.SlopeLow > 0 || l.SlopeHigh < 0 }

// FitLine fits y = a + b x by ordinary least squares over at least 3 pairs
// (for the N-2 degrees of freedom of the interval). x and y must have the
// same length and be finite; an x that does not vary fails with
// ErrNoSpread rather than giving a slope.
func FitLine(x, y []float64) (Line, error) {
	if err := fitInputs("line fit", len(x), "x", len(y), "y", "pairs"); err != nil {
		return Line{}, err
	}
	l := Line{N: len(x), XMin: math.Inf(1), XMax: math.Inf(-1)}
	// One pass of Welford-style co-moments, as FitDrift.
	var n, mx, my, sxx, syy, sxy float64
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return Line{}, fmt.Errorf("stats: line fit: pair %d (%g, %g): %w", i, x[i], y[i], ErrNotFinite)
		}
		l.XMin, l.XMax = min(l.XMin, x[i]), max(l.XMax, x[i])
		n++
		dx, dy := x[i]-mx, y[i]-my
		mx += dx / n
		my += dy / n
		sxx += dx * (x[i] - mx)
		syy += dy * (y[i] - my)
		sxy += dx * (y[i] - my)
	}
	// A spread within float64 rounding of the values is no spread.
	if l.XMax-l.XMin <= 1e-12*max(math.Abs(l.XMax), math.Abs(l.XMin)) || sxx <= 0 {
		return Line{}, fmt.Errorf("stats: line fit: every x is %g: %w", l.XMin, ErrNoSpread)
	}
	b := sxy / sxx
	ssr := max(syy-b*sxy, 0)
	dof := n - 2
	se := math.Sqrt(ssr / dof / sxx)
	q := studentTQuantile(0.975, dof)
	l.Slope, l.Intercept, l.XMean = b, my, mx
	l.SlopeSE, l.SlopeLow, l.SlopeHigh = se, b-q*se, b+q*se
	l.ResidualStd = math.Sqrt(ssr / dof)
	if syy > 0 {
		l.R = max(-1, min(1, sxy/math.Sqrt(sxx*syy)))
	}
	return l, nil
}

// fitInputs checks the inputs of a straight-line fit (what, for the errors):
// na values named a and as many named b, at least 3 of what is counted in
// points, for the n-2 degrees of freedom of the slope's interval.
func fitInputs(what string, na int, a string, nb int, b, points string) error {
	switch {
	case na != nb:
		return fmt.Errorf("stats: %s: %d %s but %d %s", what, na, a, nb, b)
	case na == 0:
		return fmt.Errorf("stats: %s: %w", what, ErrEmpty)
	case na < 3:
		return fmt.Errorf("stats: %s: %d %s, want >= 3: %w", what, na, points, ErrTooShort)
	}
	return nil
}

// Frequency is a clock's mean frequency offset over one window of its
// offset series: the least-squares slope of the offsets in the window.
type Frequency struct {
	First, Last int64   // ns, times of the window's first and last sample
	N           int     // samples in the window
	PPB         float64 // slope: ns of offset per s (parts per billion)
}

// Mid is the middle of the window's samples (ns).
func (f Frequency) Mid() int64 { return f.First + (f.Last-f.First)/2 }

// WindowFrequency derives a clock's frequency offset from its offset series
// x (ns) at times t (ns, strictly increasing): t is cut into adjacent
// windows of window ns from t[0], and each window holding at least 3
// samples spread over at least half of it gives the least-squares slope of
// its offsets, in ppb (a clock whose offset grows by 1 ns each second runs
// 1 ppb fast). Windows with fewer samples (a gap) give nothing. The
// differences within a window are taken in int64 before they become
// float64, so offsets far from zero (1.8e18 ns) keep their nanoseconds.
func WindowFrequency(t, x []int64, window int64) ([]Frequency, error) {
	if len(t) != len(x) {
		return nil, fmt.Errorf("stats: window frequency: %d times but %d offsets", len(t), len(x))
	}
	if window <= 0 {
		return nil, fmt.Errorf("stats: window frequency: window %d ns, want > 0", window)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("stats: window frequency: %w", ErrEmpty)
	}
	for i := 1; i < len(t); i++ {
		if t[i] <= t[i-1] {
			return nil, fmt.Errorf("stats: window frequency: %w", &IrregularError{Index: i, Delta: t[i] - t[i-1]})
		}
	}
	var out []Frequency
	for lo := 0; lo < len(t); {
		k := (t[lo] - t[0]) / window
		end := t[0] + (k+1)*window
		hi := lo
		for hi < len(t) && t[hi] < end {
			hi++
		}
		if hi-lo >= 3 && t[hi-1]-t[lo] >= window/2 {
			out = append(out, windowSlope(t[lo:hi], x[lo:hi]))
		}
		lo = hi
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("stats: window frequency: no window of %d ns holds 3 samples over half its length: %w", window, ErrTooShort)
	}
	return out, nil
}

// windowSlope is the least-squares slope of x against t (>= 2 samples).
func windowSlope(t, x []int64) Frequency {
	var n, mt, mx, stt, stx float64
	for i := range t {
		ti, xi := float64(t[i]-t[0]), float64(x[i]-x[0])
		n++
		dt, dx := ti-mt, xi-mx
		mt += dt / n
		mx += dx / n
		stt += dt * (ti - mt)
		stx += dt * (xi - mx)
	}
	return Frequency{First: t[0], Last: t[len(t)-1], N: len(t), PPB: stx / stt * 1e9}
}
