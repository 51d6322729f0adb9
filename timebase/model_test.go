package timebase

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// randomModel returns a model like a real clock's: |slope| <= 100 ppm, intercepts
// up to ±1 s, origins anywhere in a 2026-era REALTIME range.
func randomModel(r *rand.Rand) LinearModel {
	return LinearModel{
		Origin:    1_790_000_000_000_000_000 + r.Int64N(1e15),
		Intercept: r.Int64N(2e9) - 1e9,
		Slope:     (r.Float64()*2 - 1) * 100e-6,
	}
}

func TestApplyInvertIsIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		m := randomModel(r)
		x := m.Origin + r.Int64N(2e12) - 1e12 // within ±1000 s of the origin
		if got := m.Invert().Apply(m.Apply(x)); abs64(got-x) > 1 {
			t.Fatalf("model %+v: invert(apply(%d)) = %d, off by %d ns", m, x, got, got-x)
		}
		y := m.Apply(x)
		if got := m.Apply(m.Invert().Apply(y)); abs64(got-y) > 1 {
			t.Fatalf("model %+v: apply(invert(%d)) = %d, off by %d ns", m, y, got, got-y)
		}
	}
}

func TestMergeEqualsComposition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10000; i++ {
		m1, m2 := randomModel(r), randomModel(r) // m1: p2 rel p1, m2: p3 rel p2
		m2.Origin = m1.Origin + r.Int64N(1e10)
		t3 := m2.Origin + r.Int64N(2e11) - 1e11
		want := m1.Apply(m2.Apply(t3)) // p3 -> p2 -> p1
		if got := Merge(m1, m2).Apply(t3); abs64(got-want) > 2 {
			t.Fatalf("merge(%+v, %+v).Apply(%d) = %d, composition gives %d", m1, m2, t3, got, want)
		}
	}
}

// TestMergeDeepChain merges a chain as deep as HCA's tree for 4096 ranks and
// compares with applying every link in turn.
func TestMergeDeepChain(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const depth = 12 // log2(4096)
	for trial := 0; trial < 200; trial++ {
		links := make([]LinearModel, depth) // links[i]: p(i+1) relative to p(i)
		for i := range links {
			links[i] = randomModel(r)
		}
		merged := links[depth-1]
		for i := depth - 2; i >= 0; i-- {
			merged = Merge(links[i], merged)
		}
		x := links[depth-1].Origin + r.Int64N(1e11)
		want := x
		for i := depth - 1; i >= 0; i-- {
			want = links[i].Apply(want)
		}
		if got := merged.Apply(x); abs64(got-want) > depth {
			t.Fatalf("depth-%d merge off by %d ns", depth, got-want)
		}
	}
}

func TestMergeMatchesPaperFormula(t *testing.T) {
	m1 := LinearModel{Intercept: 1000, Slope: 20e-6}
	m2 := LinearModel{Intercept: -5000, Slope: -7e-6}
	got := Merge(m1, m2)
	wantS := m1.Slope + m2.Slope - m1.Slope*m2.Slope
	wantB := float64(m1.Intercept+m2.Intercept) - m1.Slope*float64(m2.Intercept)
	if got.Slope != wantS || float64(got.Intercept) != math.Round(wantB) {
		t.Fatalf("merge = (s %g, b %d), paper gives (s %g, b %g)", got.Slope, got.Intercept, wantS, wantB)
	}
}

func TestFitRecoversLineExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 1000; i++ {
		truth := randomModel(r)
		// Integer slope in ppb so noiseless points lie exactly on the line.
		ppb := r.Int64N(200_001) - 100_000
		truth.Slope = float64(ppb) * 1e-9
		n := 2 + r.IntN(30)
		pts := make([]Point, n)
		for j := range pts {
			dx := r.Int64N(1e11) // up to 100 s apart; a multiple of 1e9/ppb not needed:
			dx -= dx % 1_000_000_000
			x := truth.Origin + dx
			pts[j] = Point{X: x, Offset: truth.Intercept + ppb*(dx/1_000_000_000)}
		}
		if distinctX(pts) < 2 {
			continue
		}
		m, err := Fit(pts)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(m.Slope-truth.Slope) > 1e-15 {
			t.Fatalf("slope %g, want %g", m.Slope, truth.Slope)
		}
		for _, p := range pts {
			if got := m.Offset(p.X); got != p.Offset {
				t.Fatalf("fit offset at %d = %d, want %d (model %+v)", p.X, got, p.Offset, m)
			}
		}
		if m.ResidualNS > 1e-6 {
			t.Fatalf("noiseless fit has residual %g ns", m.ResidualNS)
		}
	}
}

func TestFitNoiseAndUncertainty(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const sigma = 50.0 // ns
	pts := make([]Point, 200)
	for i := range pts {
		x := int64(1e18) + int64(i)*1e9
		pts[i] = Point{X: x, Offset: 12345 + int64(float64(i)*1e9*3e-6) + int64(r.NormFloat64()*sigma)}
	}
	m, err := Fit(pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.Slope-3e-6) > 5*m.SlopeErr {
		t.Errorf("slope %g ± %g, want 3e-6", m.Slope, m.SlopeErr)
	}
	if m.ResidualNS < 0.8*sigma || m.ResidualNS > 1.2*sigma {
		t.Errorf("residual %g ns, want about %g", m.ResidualNS, sigma)
	}
	near := m.Uncertainty(m.MeanX)
	far := m.Uncertainty(m.MeanX + 3600e9)
	if near <= 0 || near > 10 || far <= near {
		t.Errorf("uncertainty near the data %d ns, an hour later %d ns; want small and growing", near, far)
	}
}

func TestFitErrors(t *testing.T) {
	for name, pts := range map[string][]Point{
		"none":         nil,
		"one":          {{X: 1, Offset: 2}},
		"same-instant": {{X: 5, Offset: 1}, {X: 5, Offset: 3}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Fit(pts); !errors.Is(err, ErrTooFewPoints) {
				t.Fatalf("Fit(%v) error %v, want ErrTooFewPoints", pts, err)
			}
		})
	}
}

func distinctX(pts []Point) int {
	seen := map[int64]bool{}
	for _, p := range pts {
		seen[p.X] = true
	}
	return len(seen)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
