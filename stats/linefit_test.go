package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFitLine(t *testing.T) {
	// Noiseless: exact, zero residuals, r = -1.
	l, err := FitLine([]float64{1, 2, 3, 5}, []float64{7, 4, 1, -5})
	if err != nil || math.Abs(l.Slope+3) > 1e-12 || l.ResidualStd > 1e-12 || math.Abs(l.At(0)-10) > 1e-12 || math.Abs(l.R+1) > 1e-12 || !l.Significant() {
		t.Fatalf("exact line: %+v %v", l, err)
	}
	// Noisy: the slope's interval covers the truth and has the textbook
	// half width t sigma / sqrt(Sxx).
	const n, slope, sigma = 2000, -35.0, 4.0
	r := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float64, n), make([]float64, n)
	var mx float64
	for i := range x {
		x[i] = 40 + 5*math.Sin(float64(i)/100)
		y[i] = 20 + slope*(x[i]-40) + sigma*r.NormFloat64()
		mx += x[i] / n
	}
	l, err = FitLine(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if slope < l.SlopeLow || slope > l.SlopeHigh || l.SlopeLow >= l.Slope || l.Slope >= l.SlopeHigh {
		t.Errorf("slope %g [%g, %g] does not cover %g", l.Slope, l.SlopeLow, l.SlopeHigh, slope)
	}
	var sxx float64
	for _, v := range x {
		sxx += (v - mx) * (v - mx)
	}
	if half, want := (l.SlopeHigh-l.SlopeLow)/2, 1.9612*sigma/math.Sqrt(sxx); math.Abs(half-want) > 0.05*want {
		t.Errorf("half width %g, want %g", half, want)
	}
	if math.Abs(l.ResidualStd-sigma) > 0.1*sigma || l.R > -0.99 || l.N != n || l.XMin < 35-1e-9 || l.XMax > 45+1e-9 {
		t.Errorf("fit %+v", l)
	}
	// Noise only: not significant.
	for i := range y {
		y[i] = sigma * r.NormFloat64()
	}
	if l, _ := FitLine(x[:50], y[:50]); l.Significant() && math.Abs(l.Slope) > 3 {
		t.Errorf("noise gives %+v", l)
	}
}

func TestFitLineBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		x, y []float64
		want error
	}{
		{"empty", nil, nil, ErrEmpty},
		{"two pairs", []float64{1, 2}, []float64{1, 2}, ErrTooShort},
		{"constant x", []float64{41.5, 41.5, 41.5, 41.5}, []float64{1, 2, 3, 4}, ErrNoSpread},
		{"x within rounding", []float64{1e9, 1e9 + 1e-7, 1e9}, []float64{1, 2, 3}, ErrNoSpread},
		{"NaN", []float64{1, math.NaN(), 3}, []float64{1, 2, 3}, ErrNotFinite},
		{"Inf y", []float64{1, 2, 3}, []float64{1, math.Inf(1), 3}, ErrNotFinite},
	} {
		if _, err := FitLine(c.x, c.y); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := FitLine([]float64{1, 2, 3}, []float64{1, 2}); err == nil {
		t.Error("lengths differ: no error")
	}
	// A constant y is a slope of 0, known exactly, not an error.
	if l, err := FitLine([]float64{1, 2, 3}, []float64{5, 5, 5}); err != nil || l.Slope != 0 || l.SlopeSE != 0 || l.R != 0 {
		t.Errorf("constant y: %+v %v", l, err)
	}
}

func TestWindowFrequency(t *testing.T) {
	// 1 Hz offsets far from zero, jittered, whose frequency steps from
	// +50 ppb to -20 ppb at 600 s (a window's edge), with a 300 s gap from
	// 1000 s: 100 s windows, none inside the gap.
	t0, base := int64(1_700_000_000e9), int64(1_795_572_879_344_786_909)
	var ts, xs []int64
	x := 0.0
	for i := range 2000 {
		ppb := 50.0
		if i >= 600 {
			ppb = -20
		}
		if i > 0 {
			x += ppb
		}
		if i >= 1000 && i < 1300 {
			continue
		}
		ts = append(ts, t0+int64(i)*1e9+int64(i%7)*1000)
		xs = append(xs, base+int64(math.Round(x)))
	}
	fs, err := WindowFrequency(ts, xs, 100e9)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 17 {
		t.Fatalf("%d windows, want 17 (20 less the 3 of the gap)", len(fs))
	}
	for _, f := range fs {
		want := 50.0
		if f.First >= t0+600e9 {
			want = -20
		}
		if math.Abs(f.PPB-want) > 0.01 || f.N != 100 || f.Last-f.First < 98e9 {
			t.Errorf("window at %d s: %+v, want %g ppb", (f.First-t0)/1e9, f, want)
		}
		if f.Mid() != f.First+(f.Last-f.First)/2 {
			t.Errorf("mid %d", f.Mid())
		}
	}
	// A window whose samples cover less than half of it is left out.
	if fs, err := WindowFrequency([]int64{0, 1e9, 2e9, 3e9}, []int64{0, 1, 2, 3}, 10e9); !errors.Is(err, ErrTooShort) {
		t.Errorf("sparse window: %v %v", fs, err)
	}
	if _, err := WindowFrequency([]int64{0, 2, 1}, []int64{0, 1, 2}, 10); !errors.Is(err, ErrIrregular) {
		t.Errorf("unsorted: %v", err)
	}
	if _, err := WindowFrequency(nil, nil, 10); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, err := WindowFrequency([]int64{1}, []int64{1}, 0); err == nil {
		t.Error("window 0: no error")
	}
}

// TestTemperatureCoefficientKnown is the fit's known answer without the
// report's pairing: offsets whose frequency is 12 ppb - 35 ppb/°C (T - 40 °C),
// T a daily-like swing, white phase noise of 20 ns; the windowed
// frequencies against the window-mean temperature give the coefficient
// within 5 %.
func TestTemperatureCoefficientKnown(t *testing.T) {
	const k = -35.0
	r := rand.New(rand.NewPCG(3, 4))
	n := 6 * 3600
	ts, xs, temp := make([]int64, n), make([]int64, n), make([]float64, n)
	phase := 0.0
	for i := range n {
		temp[i] = 40 + 5*math.Sin(2*math.Pi*float64(i)/7200)
		phase += 12 + k*(temp[i]-40)
		ts[i] = int64(i) * 1e9
		xs[i] = int64(math.Round(phase + 20*r.NormFloat64()))
	}
	fs, err := WindowFrequency(ts, xs, 64e9)
	if err != nil {
		t.Fatal(err)
	}
	var tx, fy []float64
	for _, f := range fs {
		var s float64
		lo, hi := int(f.First/1e9), int(f.Last/1e9)
		for i := lo; i <= hi; i++ {
			s += temp[i]
		}
		tx, fy = append(tx, s/float64(hi-lo+1)), append(fy, f.PPB)
	}
	l, err := FitLine(tx, fy)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Slope-k) > 0.05*math.Abs(k) || k < l.SlopeLow || k > l.SlopeHigh {
		t.Errorf("coefficient %.3f [%.3f, %.3f] ppb/°C, want %g within 5 %%", l.Slope, l.SlopeLow, l.SlopeHigh, k)
	}
	if math.Abs(l.At(40)-12) > 1 {
		t.Errorf("frequency at 40 °C %.3f ppb, want 12", l.At(40))
	}
}
