package stats

import (
	"fmt"
	"math"
)

// Drift is a least-squares line through an offset series:
// offset(t) = Intercept + Slope (t - T0).
type Drift struct {
	N         int
	T0        int64   // ns, the first timestamp
	Intercept float64 // ns, fitted offset at T0
	// SlopePPM is the slope in parts per million (ns of offset per ms);
	// [SlopeLowPPM, SlopeHighPPM] is its two-sided 95 % confidence
	// interval, SlopePPM -+ t(0.975, N-2) * standard error.
	SlopePPM     float64
	SlopeLowPPM  float64
	SlopeHighPPM float64
	SlopeErrPPM  float64 // standard error of the slope, ppm
	ResidualStd  float64 // ns, sqrt(sum of squared residuals / (N-2))
}

// Predict returns the fitted offset (ns) at time t (ns); the residual of a
// sample is its offset minus Predict(its time).
func (d Drift) Predict(t int64) float64 {
	return d.Intercept + d.SlopePPM*1e-6*float64(t-d.T0)
}

// FitDrift fits a straight line to offsets x (ns) at times t (ns) by
// ordinary least squares. t must be strictly increasing (unsorted or
// duplicate timestamps fail with an *IrregularError naming the index) and
// hold at least 3 points, for the confidence interval's n-2 degrees of
// freedom; t and x must have the same length.
func FitDrift(t, x []int64) (Drift, error) {
	if err := fitInputs("drift fit", len(t), "times", len(x), "offsets", "points"); err != nil {
		return Drift{}, err
	}
	for i := 1; i < len(t); i++ {
		if t[i] <= t[i-1] {
			return Drift{}, fmt.Errorf("stats: drift fit: %w", &IrregularError{Index: i, Delta: t[i] - t[i-1]})
		}
	}
	// One pass of Welford-style co-moments over (t - t0, x - x0).
	t0, x0 := t[0], float64(x[0])
	var n, mt, mx, stt, sxx, stx float64
	for i := range t {
		ti := float64(t[i] - t0)
		xi := float64(x[i]) - x0
		n++
		dt := ti - mt
		dx := xi - mx
		mt += dt / n
		mx += dx / n
		stt += dt * (ti - mt)
		sxx += dx * (xi - mx)
		stx += dt * (xi - mx)
	}
	b := stx / stt
	ssr := max(sxx-b*stx, 0)
	dof := n - 2
	se := math.Sqrt(ssr / dof / stt)
	q := studentTQuantile(0.975, dof)
	d := Drift{
		N:            len(t),
		T0:           t0,
		Intercept:    x0 + mx - b*mt,
		SlopePPM:     b * 1e6,
		SlopeErrPPM:  se * 1e6,
		SlopeLowPPM:  (b - q*se) * 1e6,
		SlopeHighPPM: (b + q*se) * 1e6,
		ResidualStd:  math.Sqrt(ssr / dof),
	}
	return d, nil
}

// studentTQuantile returns the p quantile (p > 0.5) of Student's t with nu
// degrees of freedom, by bisection on its CDF.
func studentTQuantile(p, nu float64) float64 {
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, nu) < p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if studentTCDF(mid, nu) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-13*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// studentTCDF returns P(T <= t) for t >= 0.
func studentTCDF(t, nu float64) float64 {
	return 1 - 0.5*regIncBeta(nu/2, 0.5, nu/(nu+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by the
// continued fraction of Numerical Recipes (modified Lentz).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaCF(b, a, 1-x)/b
	}
	return front * betaCF(a, b, x) / a
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	nonzero := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/nonzero(1-(a+b)*x/(a+1))
	f := d
	// step takes one term num of the fraction (modified Lentz) and returns
	// the factor it multiplies f by.
	step := func(num float64) float64 {
		d = 1 / nonzero(1+num*d)
		c = nonzero(1 + num/c)
		return d * c
	}
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		f *= step(fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)))
		del := step(-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)))
		f *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return f
}
