package timebase

import (
	"errors"
	"fmt"
	"math"
)

// LinearModel relates a local clock to a reference clock in the convention of the
// HCA papers: the offset of the local clock from the reference, as a function of
// local time x, is
//
//	offset(x) = Intercept + Slope*(x - Origin)   (nanoseconds)
//
// and the reference time of a local reading x is x - offset(x). Origin keeps the
// floating-point product small: x - Origin is a short interval, while the absolute
// Intercept stays an exact int64.
//
// A fitted model also carries what is needed to bound its error: the number of
// points, the mean local time, the residual standard deviation and the standard
// error of the slope.
type LinearModel struct {
	Origin    int64   // local time the intercept refers to (ns)
	Intercept int64   // offset at Origin (ns)
	Slope     float64 // d offset / d local time (dimensionless; 1e-6 = 1 ppm)

	N          int     // number of points fitted (0 for a model that was set, not fitted)
	MeanX      int64   // mean local time of the fitted points (ns)
	ResidualNS float64 // residual standard deviation of the fit (ns)
	SlopeErr   float64 // standard error of Slope
	FloorNS    int64   // an uncertainty every translation carries (e.g. the read window)
}

// Point is one observation for a fit: at local time X the local clock was Offset
// nanoseconds ahead of the reference.
type Point struct {
	X      int64
	Offset int64
}

// ErrTooFewPoints is returned by Fit when the points cannot define a line.
var ErrTooFewPoints = errors.New("too few distinct points to fit a line")

// Identity is the model of a clock against itself.
var Identity = LinearModel{}

// Offset returns the offset of the local clock from the reference at local time x.
func (m LinearModel) Offset(x int64) int64 {
	return m.Intercept + roundNS(m.Slope*float64(x-m.Origin))
}

// Apply maps a local time to reference time.
func (m LinearModel) Apply(x int64) int64 { return x - m.Offset(x) }

// Invert returns the model of the reference clock relative to the local clock, so
// that m.Invert().Apply(m.Apply(x)) == x to within a nanosecond.
func (m LinearModel) Invert() LinearModel {
	inv := LinearModel{
		Origin:    m.Origin - m.Intercept,
		Intercept: -m.Intercept,
		Slope:     -m.Slope / (1 - m.Slope),
		N:         m.N,
		// Residuals are the same size on either side; the slope error scales with
		// d(s')/ds = -1/(1-s)^2.
		ResidualNS: m.ResidualNS,
		SlopeErr:   m.SlopeErr / ((1 - m.Slope) * (1 - m.Slope)),
		FloorNS:    m.FloorNS,
	}
	inv.MeanX = m.Apply(m.MeanX)
	return inv
}

// Merge composes two models along a chain p1 <- p2 <- p3: m1 is p2 relative to p1
// and m2 is p3 relative to p2. The result is p3 relative to p1
// (the MERGE_LMS of the HCA paper: s = s1 + s2 - s1*s2, b = b1 + b2 - s1*b2).
func Merge(m1, m2 LinearModel) LinearModel {
	// offset(t3) = b2 + s2(t3-X2) + b1 + s1(t3 - b2 - s2(t3-X2) - X1)
	b := m1.Intercept + m2.Intercept + roundNS(m1.Slope*float64(m2.Origin-m2.Intercept-m1.Origin))
	s := m1.Slope + m2.Slope - m1.Slope*m2.Slope
	out := LinearModel{Origin: m2.Origin, Intercept: b, Slope: s}
	// Errors add in quadrature; both models are evaluated around p3's mean time.
	out.N = min(m1.N, m2.N)
	out.MeanX = m2.MeanX
	out.ResidualNS = math.Hypot(m1.ResidualNS, m2.ResidualNS)
	out.SlopeErr = math.Hypot(m1.SlopeErr*(1-m2.Slope), m2.SlopeErr*(1-m1.Slope))
	out.FloorNS = m1.FloorNS + m2.FloorNS
	return out
}

// Uncertainty is the estimated one-sigma error (ns) of m.Offset(x): the error of the
// fitted line at x, sqrt(σ²/n + (σ_s·(x−x̄))²), plus FloorNS. It grows with the
// distance from the fitted points, so stale models report larger errors.
func (m LinearModel) Uncertainty(x int64) int64 {
	var u float64
	if m.N > 0 {
		dx := float64(x - m.MeanX)
		u = math.Sqrt(m.ResidualNS*m.ResidualNS/float64(m.N) + (m.SlopeErr*dx)*(m.SlopeErr*dx))
	}
	return m.FloorNS + int64(math.Ceil(u))
}

// Fit returns the least-squares line through points. Two points with distinct X
// define a line; more give residual and slope errors. The points need not be
// sorted. Arithmetic is on differences from the first point, so absolute times of
// 1.7e18 ns keep nanosecond resolution.
func Fit(points []Point) (LinearModel, error) {
	if len(points) < 2 {
		return LinearModel{}, fmt.Errorf("fit %d points: %w", len(points), ErrTooFewPoints)
	}
	x0, y0 := points[0].X, points[0].Offset
	n := float64(len(points))
	var sx, sy float64
	for _, p := range points {
		sx += float64(p.X - x0)
		sy += float64(p.Offset - y0)
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, p := range points {
		dx := float64(p.X-x0) - mx
		dy := float64(p.Offset-y0) - my
		sxx += dx * dx
		sxy += dx * dy
	}
	if sxx == 0 {
		return LinearModel{}, fmt.Errorf("fit %d points at one local time: %w", len(points), ErrTooFewPoints)
	}
	slope := sxy / sxx
	// The origin is the point nearest the mean: the line passes through the mean,
	// and anchoring at a real point keeps noiseless integer data exact.
	origin := points[0].X
	for _, p := range points {
		if math.Abs(float64(p.X-x0)-mx) < math.Abs(float64(origin-x0)-mx) {
			origin = p.X
		}
	}
	m := LinearModel{
		Origin:    origin,
		Intercept: y0 + roundNS(my+slope*(float64(origin-x0)-mx)),
		Slope:     slope,
		N:         len(points),
		MeanX:     x0 + roundNS(mx),
	}
	if len(points) > 2 {
		var sse float64
		for _, p := range points {
			r := float64(p.Offset-y0) - my - slope*(float64(p.X-x0)-mx)
			sse += r * r
		}
		sigma := math.Sqrt(sse / (n - 2))
		m.ResidualNS = sigma
		m.SlopeErr = sigma / math.Sqrt(sxx)
	}
	return m, nil
}

func roundNS(f float64) int64 { return int64(math.Round(f)) }
