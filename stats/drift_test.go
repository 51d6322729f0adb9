package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestStudentTQuantile(t *testing.T) {
	// Two-sided 95 % critical values from standard tables.
	for _, c := range []struct{ nu, want float64 }{
		{1, 12.7062047}, {2, 4.30265273}, {5, 2.57058184}, {10, 2.22813885}, {30, 2.04227246}, {1e7, 1.95996398},
	} {
		if got := studentTQuantile(0.975, c.nu); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("t(0.975, %v) = %.8f, want %.8f", c.nu, got, c.want)
		}
	}
}

func TestFitDrift(t *testing.T) {
	const (
		n     = 86400 // a day at 1 Hz
		ppm   = 3.7
		sigma = 200.0 // ns white noise
	)
	r := rand.New(rand.NewPCG(17, 18))
	t0 := int64(1_700_000_000e9) // a realistic epoch: exercises the T0 shift
	ts := make([]int64, n)
	xs := make([]int64, n)
	for i := range ts {
		ts[i] = t0 + int64(i)*1e9 + r.Int64N(1000) // 1 us jitter
		xs[i] = int64(math.Round(-5000 + ppm*1e-6*float64(ts[i]-t0) + sigma*r.NormFloat64()))
	}
	d, err := FitDrift(ts, xs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d.SlopePPM-ppm) > 0.01*ppm {
		t.Errorf("slope %v ppm, want %v within 1 %%", d.SlopePPM, ppm)
	}
	// Tighter: the true slope lies in the interval, whose half width is
	// t(0.975, n-2) sigma / sqrt(sum (t - mean t)^2) within a few %.
	if ppm < d.SlopeLowPPM || ppm > d.SlopeHighPPM {
		t.Errorf("%v ppm outside CI [%v, %v]", ppm, d.SlopeLowPPM, d.SlopeHighPPM)
	}
	stt := float64(n) * (float64(n)*float64(n) - 1) / 12 * 1e18 // regular grid, s^2 -> ns^2
	half := 1.96 * sigma / math.Sqrt(stt) * 1e6
	if got := (d.SlopeHighPPM - d.SlopeLowPPM) / 2; math.Abs(got-half) > 0.05*half {
		t.Errorf("CI half width %v ppm, want %v", got, half)
	}
	if math.Abs(d.ResidualStd-sigma) > 4.5*sigma/math.Sqrt(2*n) {
		t.Errorf("residual std %v, want %v", d.ResidualStd, sigma)
	}
	if math.Abs(d.Intercept+5000) > 4.5*sigma*2/math.Sqrt(n) || d.T0 != ts[0] {
		t.Errorf("intercept %v at %d, want -5000 at %d", d.Intercept, d.T0, ts[0])
	}
	if p := d.Predict(ts[n-1]); math.Abs(p-(-5000+ppm*1e-6*float64(ts[n-1]-t0))) > 10 {
		t.Errorf("predict end %v", p)
	}

	// A noiseless line is recovered exactly, with zero residuals.
	d, err = FitDrift([]int64{10, 20, 30, 50}, []int64{1, 3, 5, 9})
	if err != nil || math.Abs(d.SlopePPM-0.2e6) > 1e-6 || d.ResidualStd > 1e-9 || math.Abs(d.Intercept-1) > 1e-9 {
		t.Errorf("exact line: %+v %v", d, err)
	}
}

func TestFitDriftBadInput(t *testing.T) {
	cases := []struct {
		name  string
		t, x  []int64
		want  error
		index int
	}{
		{"empty", nil, nil, ErrEmpty, 0},
		{"one", []int64{1}, []int64{1}, ErrTooShort, 0},
		{"two", []int64{1, 2}, []int64{1, 2}, ErrTooShort, 0},
		{"mismatch", []int64{1, 2, 3}, []int64{1, 2}, nil, 0},
		{"unsorted", []int64{1, 3, 2, 4}, []int64{0, 0, 0, 0}, ErrIrregular, 2},
		{"duplicate", []int64{1, 2, 3, 3}, []int64{0, 0, 0, 0}, ErrIrregular, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := FitDrift(c.t, c.x)
			if err == nil {
				t.Fatalf("no error: %+v", d)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%v, want %v", err, c.want)
			}
			var ie *IrregularError
			if c.index > 0 && (!errors.As(err, &ie) || ie.Index != c.index) {
				t.Errorf("%v: want index %d", err, c.index)
			}
		})
	}
}

func TestRegular(t *testing.T) {
	ts := []int64{0, 1000, 2100, 2900, 6000, 7000, 7000}
	err := CheckRegular(ts[:4], 1000)
	if err != nil {
		t.Errorf("jittered series: %v", err)
	}
	var ie *IrregularError
	if err := CheckRegular(ts[:5], 1000); !errors.As(err, &ie) || ie.Index != 4 || ie.Delta != 3100 {
		t.Errorf("gap: %v", err)
	}
	if err := CheckRegular(ts, 1000); !errors.As(err, &ie) || ie.Index != 4 {
		t.Errorf("first irregular index: %v", err)
	}
	if err := CheckRegular([]int64{5, 4}, 1); !errors.As(err, &ie) || ie.Index != 1 || ie.Delta != -1 {
		t.Errorf("unsorted: %v", err)
	}
	if err := CheckRegular(ts, 0); err == nil {
		t.Error("tau0 0 accepted")
	}
	segs, err := SplitRegular(ts[:6], 1000)
	if err != nil || len(segs) != 2 || segs[0] != (Segment{0, 4}) || segs[1] != (Segment{4, 6}) {
		t.Errorf("split: %v %v", segs, err)
	}
	if _, err := SplitRegular(ts, 1000); !errors.As(err, &ie) || ie.Index != 6 || ie.Delta != 0 {
		t.Errorf("split duplicate: %v", err)
	}
	if _, err := SplitRegular(nil, 1000); !errors.Is(err, ErrEmpty) {
		t.Errorf("split empty: %v", err)
	}
	if err := CheckRegular([]int64{math.MinInt64, math.MaxInt64}, 1); !errors.Is(err, ErrIrregular) {
		t.Errorf("overflowing interval: %v", err)
	}
}
