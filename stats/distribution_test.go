package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestCDF(t *testing.T) {
	a, _ := NewAccumulator(Config{})
	a.AddSlice([]int64{2, 1, 1, 5})
	pts, err := a.CDF(10)
	if err != nil {
		t.Fatal(err)
	}
	want := []CDFPoint{{1, 0.5}, {2, 0.75}, {5, 1}}
	if len(pts) != len(want) {
		t.Fatalf("cdf %+v, want %+v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Errorf("point %d: %+v, want %+v", i, pts[i], want[i])
		}
	}

	r := rand.New(rand.NewPCG(13, 14))
	for _, limit := range []int{0, -1} {
		a, _ := NewAccumulator(Config{ExactLimit: limit})
		for range 20000 {
			a.Add(int64(1e4 * r.NormFloat64()))
		}
		pts, err := a.CDF(100)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) > 100 || pts[len(pts)-1].F != 1 || pts[len(pts)-1].X != float64(a.max) {
			t.Fatalf("limit %d: %d points, last %+v", limit, len(pts), pts[len(pts)-1])
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].X <= pts[i-1].X || pts[i].F <= pts[i-1].F {
				t.Fatalf("limit %d: not increasing at %d: %+v %+v", limit, i, pts[i-1], pts[i])
			}
		}
		// Points follow the normal CDF within sampling error
		// (Dvoretzky-Kiefer-Wolfowitz, alpha 1e-6: sqrt(ln(2/1e-6)/2n))
		// plus the bucket shift of histogram mode.
		eps := math.Sqrt(math.Log(2/1e-6)/(2*20000)) + 0.01
		for _, p := range pts {
			if want := 0.5 * math.Erfc(-p.X/(1e4*math.Sqrt2)); math.Abs(p.F-want) > eps {
				t.Errorf("limit %d: F(%v) = %v, normal %v", limit, p.X, p.F, want)
			}
		}
	}
}

func TestHistogram(t *testing.T) {
	a, _ := NewAccumulator(Config{})
	a.AddSlice([]int64{0, 1, 2, 3, 4, 4, 10})
	h, err := a.Histogram(5)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := []int64{2, 2, 2, 0, 1} // edges 0 2 4 6 8 10
	for i, c := range wantCounts {
		if h.Counts[i] != c || h.Edges[i] != float64(2*i) {
			t.Errorf("bin %d: [%v, ..) count %d, want [%d, ..) %d", i, h.Edges[i], h.Counts[i], 2*i, c)
		}
	}
	if h.Edges[5] != 10 {
		t.Errorf("last edge %v", h.Edges[5])
	}

	// Normal data: counts total N, fit parameters are the sample moments,
	// and each bin's count is within 5 Poisson standard deviations of the
	// fitted expectation.
	r := rand.New(rand.NewPCG(15, 16))
	for _, limit := range []int{0, -1} {
		a, _ := NewAccumulator(Config{ExactLimit: limit})
		for range 100000 {
			a.Add(int64(math.Round(-300 + 2e4*r.NormFloat64())))
		}
		s, _ := a.Summary()
		h, err := a.Histogram(40)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		var exp float64
		for i, c := range h.Counts {
			total += c
			exp += h.Expected[i]
			if d := math.Abs(float64(c) - h.Expected[i]); d > 5*math.Sqrt(h.Expected[i])+5 {
				t.Errorf("limit %d bin %d: count %d, fitted %v", limit, i, c, h.Expected[i])
			}
			// Density at the bin centre approximates the bin's expectation.
			mid := (h.Edges[i] + h.Edges[i+1]) / 2
			if d := math.Abs(h.Density(mid) - h.Expected[i]); d > 0.05*h.Expected[i]+1 { // midpoint rule: w^2 f''/24
				t.Errorf("bin %d: density %v, expected %v", i, h.Density(mid), h.Expected[i])
			}
		}
		if total != s.N || h.N != s.N || h.Mu != s.Mean || h.Sigma != s.Std {
			t.Errorf("limit %d: total %d, fit %v %v, summary %+v", limit, total, h.Mu, h.Sigma, s)
		}
		if exp > float64(s.N) || exp < 0.99*float64(s.N) {
			t.Errorf("limit %d: expected total %v of %d", limit, exp, s.N)
		}
	}

	// One distinct value: one bin around it holds everything.
	a, _ = NewAccumulator(Config{})
	a.AddSlice([]int64{7, 7, 7})
	h, err = a.Histogram(3)
	if err != nil || h.Counts[1] != 3 || h.Expected[1] != 3 || h.Edges[0] != 6.5 || h.Edges[3] != 7.5 {
		t.Errorf("constant: %+v %v", h, err)
	}
}
