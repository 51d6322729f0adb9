package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// NBS14 data sets and the deviations published for them in NIST SP 1065
// (W. J. Riley, Handbook of Frequency Stability Analysis, 2008, pp.
// 107-108, the NBS14 test tables; also Riley, "The Calculation of Time
// Domain Frequency Stability", wriley.com/paper1ht.htm); the same values
// are listed in the tests of github.com/aewallin/allantools
// (tests/nbs14). Only the data and the published constants are taken.
var (
	// Fractional frequency, 9 values, tau0 = 1 (any unit).
	nbs14Freq = []float64{892.0, 809.0, 823.0, 798.0, 671.0, 644.0, 883.0, 903.0, 677.0}
	// The same as phase with the mean frequency removed, as published.
	nbs14Phase = []float64{0.00000, 103.11111, 123.22222, 157.33333, 166.44444, 48.55555, -96.33333, -2.22222, 111.88889, 0.00000}
)

// published holds a value with the unit of its last printed digit.
type published struct {
	value, ulp float64
}

func checkPublished(t *testing.T, what string, got float64, want published) {
	t.Helper()
	if d := math.Abs(got - want.value); d > want.ulp/2 {
		t.Errorf("%s = %.9g, published %.9g (+- %.1g): off by %.3g", what, got, want.value, want.ulp/2, d)
	}
}

func TestNBS14TenPoint(t *testing.T) {
	fromFreq, err := FrequencyToPhase(nbs14Freq, 1)
	if err != nil {
		t.Fatal(err)
	}
	// SP 1065 NBS14 10-point table, tau = 1 and 2.
	want := map[string][2]published{
		"adev": {{91.22945, 1e-5}, {85.95287, 1e-5}}, // overlapping
		"mdev": {{91.22945, 1e-5}, {74.78849, 1e-5}},
		"tdev": {{52.67135, 1e-5}, {86.35831, 1e-5}},
	}
	funcs := map[string]func([]float64) ([]Deviation, error){
		"adev": func(x []float64) ([]Deviation, error) { return ADev(x, 1, []int{1, 2}) },
		"mdev": func(x []float64) ([]Deviation, error) { return MDev(x, 1, []int{1, 2}) },
		"tdev": func(x []float64) ([]Deviation, error) { return TDev(x, 1, []int{1, 2}) },
	}
	// The published phase is rounded to 5 decimals, which moves the
	// results by up to ~3e-5; the phase integrated from the frequency data
	// is exact and must match to the published precision.
	inputs := []struct {
		name  string
		x     []float64
		slack float64
	}{{"frequency", fromFreq, 0}, {"phase", nbs14Phase, 1e-4}}
	for _, in := range inputs {
		for name, f := range funcs {
			t.Run(in.name+"/"+name, func(t *testing.T) {
				devs, err := f(in.x)
				if err != nil {
					t.Fatal(err)
				}
				if len(devs) != 2 {
					t.Fatalf("got %d taus, want 2: %+v", len(devs), devs)
				}
				for i, d := range devs {
					w := want[name][i]
					w.ulp += 2 * in.slack
					checkPublished(t, name, d.Value, w)
					if d.Tau != int64(i+1) {
						t.Errorf("tau %d, want %d", d.Tau, i+1)
					}
				}
			})
		}
	}
	// Terms of the outer sums for N = 10: ADEV N-2m, MDEV N-3m+1.
	a, _ := ADev(fromFreq, 1, nil)
	m, _ := MDev(fromFreq, 1, nil)
	if len(a) != 3 || a[0].N != 8 || a[1].N != 6 || a[2].N != 2 {
		t.Errorf("adev octaves %+v, want m = 1, 2, 4 with 8, 6, 2 terms", a)
	}
	if len(m) != 2 || m[0].N != 8 || m[1].N != 5 {
		t.Errorf("mdev octaves %+v, want m = 1, 2 with 8, 5 terms", m)
	}
}

// nbs14Thousand generates the NBS14 1000-point frequency data set as SP
// 1065 specifies it: n(0) = 1234567890,
// n(i+1) = 16807 n(i) mod 2147483647, y(i) = n(i) / 2147483647.
func nbs14Thousand(t *testing.T) []float64 {
	n := int64(1234567890)
	y := make([]float64, 1000)
	for i := range y {
		y[i] = float64(n) / 2147483647
		n = 16807 * n % 2147483647
		if i < 3 && n != []int64{395529916, 1209410747, 633705974}[i] {
			t.Fatalf("generator value %d = %d, SP 1065 gives another", i+1, n)
		}
	}
	return y
}

func TestNBS14Thousand(t *testing.T) {
	const tau0 = int64(1e9) // 1 s
	x, err := FrequencyToPhase(nbs14Thousand(t), tau0)
	if err != nil {
		t.Fatal(err)
	}
	ms := []int{1, 10, 100}
	// SP 1065 NBS14 1000-point table, tau = 1, 10, 100 s. TDEV is published in s, ours
	// is in ns.
	cases := []struct {
		name string
		f    func([]float64, int64, []int) ([]Deviation, error)
		want []published
	}{
		{"adev", ADev[float64], []published{{2.922319e-01, 1e-7}, {9.159953e-02, 1e-8}, {3.241343e-02, 1e-8}}},
		{"mdev", MDev[float64], []published{{2.922319e-01, 1e-7}, {6.172376e-02, 1e-8}, {2.170921e-02, 1e-8}}},
		{"tdev", TDev[float64], []published{{1.687202e-01 * 1e9, 1e-7 * 1e9}, {3.563623e-01 * 1e9, 1e-7 * 1e9}, {1.253382e+00 * 1e9, 1e-6 * 1e9}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			devs, err := c.f(x, tau0, ms)
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) != 3 {
				t.Fatalf("got %d taus, want 3", len(devs))
			}
			for i, d := range devs {
				checkPublished(t, c.name, d.Value, c.want[i])
				if d.Tau != int64(ms[i])*tau0 {
					t.Errorf("tau %d, want %d", d.Tau, int64(ms[i])*tau0)
				}
			}
		})
	}
}

// slope fits log(value) against log(tau) by least squares.
func slope(devs []Deviation, fromM int) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, d := range devs {
		if d.M < fromM {
			continue
		}
		lx, ly := math.Log(float64(d.Tau)), math.Log(d.Value)
		n++
		sx += lx
		sy += ly
		sxx += lx * lx
		sxy += lx * ly
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func TestNoiseSlopes(t *testing.T) {
	const n = 1 << 16
	const tau0 = int64(1e9)
	r := rand.New(rand.NewPCG(1, 2))
	wpm := make([]float64, n) // white phase: x iid, 100 ns
	wfm := make([]float64, n) // white frequency: y iid 1e-9, x its integral
	for i := range wpm {
		wpm[i] = 100 * r.NormFloat64()
		if i > 0 {
			wfm[i] = wfm[i-1] + 1e-9*r.NormFloat64()*float64(tau0)
		}
	}
	ms := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
	// Textbook slopes (SP 1065, noise type identification): ADEV tau^-1 (WPM),
	// tau^-1/2 (WFM); MDEV tau^-3/2, tau^-1/2; TDEV tau^-1/2, tau^+1/2.
	// MDEV and TDEV reach the WPM slope only once m >> 1, so they are
	// fitted from m = 8.
	cases := []struct {
		name  string
		f     func([]float64, int64, []int) ([]Deviation, error)
		x     []float64
		from  int
		slope float64
	}{
		{"adev/wpm", ADev[float64], wpm, 1, -1},
		{"adev/wfm", ADev[float64], wfm, 1, -0.5},
		{"mdev/wpm", MDev[float64], wpm, 8, -1.5},
		{"mdev/wfm", MDev[float64], wfm, 1, -0.5},
		{"tdev/wpm", TDev[float64], wpm, 8, -0.5},
		{"tdev/wfm", TDev[float64], wfm, 1, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			devs, err := c.f(c.x, tau0, ms)
			if err != nil {
				t.Fatal(err)
			}
			got := slope(devs, c.from)
			if math.Abs(got-c.slope) > 0.1*math.Abs(c.slope) {
				t.Errorf("log-log slope %.3f, want %.2f within 10 %%", got, c.slope)
			}
			t.Logf("slope %.4f (want %.2f)", got, c.slope)
		})
	}
	// WPM level: ADEV(tau) = sqrt(3) sigma_x / tau exactly in expectation.
	a, _ := ADev(wpm, tau0, []int{1})
	want := math.Sqrt(3) * 100 / 1e9
	// The estimate is a mean of N-2 squares of variance 6 sigma^2 with
	// lag-1 and lag-2 correlation; 5 % is > 5 standard errors at n = 65536.
	if math.Abs(a[0].Value-want) > 0.05*want {
		t.Errorf("WPM ADEV(1 s) = %g, want %g", a[0].Value, want)
	}
}

func bruteMTIE(x []float64, m int) float64 {
	var worst float64
	for k := 0; k+m < len(x); k++ {
		lo, hi := x[k], x[k]
		for _, v := range x[k : k+m+1] {
			lo, hi = min(lo, v), max(hi, v)
		}
		worst = max(worst, hi-lo)
	}
	return worst
}

func TestMTIE(t *testing.T) {
	// Known answer: a ramp of 3 ns per sample has MTIE = 3 m.
	ramp := make([]int64, 100)
	for i := range ramp {
		ramp[i] = int64(3 * i)
	}
	devs, err := MTIE(ramp, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 7 { // m = 1..64, 64+1 <= 100
		t.Errorf("%d taus, want 7", len(devs))
	}
	for _, d := range devs {
		if d.Value != float64(3*d.M) || d.N != 100-d.M || d.Tau != int64(10*d.M) {
			t.Errorf("ramp: %+v, want value %d, %d terms", d, 3*d.M, 100-d.M)
		}
	}
	// Against the O(n m) definition on random walks with plateaus.
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		x := make([]float64, 1+r.IntN(300))
		for i := 1; i < len(x); i++ {
			x[i] = x[i-1] + float64(r.IntN(7)-3)
		}
		ms := []int{1, 2, 3, 5, 8, 13, 40, 299}
		devs, err := MTIE(x, 1, ms)
		if len(x) < 2 {
			if !errors.Is(err, ErrTooShort) {
				t.Fatalf("n=%d: err %v, want ErrTooShort", len(x), err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range devs {
			if want := bruteMTIE(x, d.M); d.Value != want {
				t.Fatalf("trial %d n=%d m=%d: MTIE %g, brute force %g", trial, len(x), d.M, d.Value, want)
			}
		}
	}
}

// TestModSumDefinition checks that the sliding MDEV sum matches the definition
// evaluated term by term.
func TestModSumDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 500)
	for i := range x {
		x[i] = 1e6 + 50*r.NormFloat64() + float64(i)*7
	}
	for _, m := range []int{1, 2, 3, 7, 50, 166} {
		got, n := modSum(x, m)
		var want float64
		for j := 0; j+3*m <= len(x); j++ {
			var s float64
			for i := j; i < j+m; i++ {
				s += x[i+2*m] - 2*x[i+m] + x[i]
			}
			want += s * s
		}
		if n != len(x)-3*m+1 || math.Abs(got-want) > 1e-9*want {
			t.Errorf("m=%d: sum %g (%d terms), definition %g", m, got, n, want)
		}
	}
}

func TestDeviationBadInput(t *testing.T) {
	ok := []float64{1, 2, 3, 5, 8}
	cases := []struct {
		name string
		x    []float64
		tau0 int64
		ms   []int
		want error
	}{
		{"empty", nil, 1, nil, ErrEmpty},
		{"one", []float64{1}, 1, nil, ErrTooShort},
		{"two", []float64{1, 2}, 1, nil, ErrTooShort},
		{"nan", []float64{1, math.NaN(), 3}, 1, nil, ErrNotFinite},
		{"inf", []float64{1, 2, math.Inf(-1)}, 1, nil, ErrNotFinite},
		{"too long m", ok, 1, []int{3, 4}, ErrTooShort},
		{"zero m", ok, 1, []int{0}, nil},
		{"zero tau0", ok, 0, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for name, f := range map[string]func([]float64, int64, []int) ([]Deviation, error){
				"adev": ADev[float64], "mdev": MDev[float64], "tdev": TDev[float64],
			} {
				devs, err := f(c.x, c.tau0, c.ms)
				if err == nil {
					t.Fatalf("%s: no error, got %+v", name, devs)
				}
				if c.want != nil && !errors.Is(err, c.want) {
					t.Errorf("%s: %v, want %v", name, err, c.want)
				}
			}
		})
	}
	// Too short for some taus: those are omitted, in order.
	a, err := ADev(ok, 1, []int{4, 2, 1, 3})
	if err != nil || len(a) != 2 || a[0].M != 2 || a[1].M != 1 {
		t.Errorf("adev n=5 m=4,2,1,3: %+v %v, want m = 2, 1", a, err)
	}
	m, err := MDev(ok, 1, nil)
	if err != nil || len(m) != 1 || m[0].M != 1 {
		t.Errorf("mdev n=5 octaves: %+v %v, want m = 1 only", m, err)
	}
	if _, err := MTIE([]int64{5}, 1, nil); !errors.Is(err, ErrTooShort) {
		t.Errorf("mtie one point: %v, want ErrTooShort", err)
	}
	if _, err := FrequencyToPhase([]float64{1, math.NaN()}, 1); !errors.Is(err, ErrNotFinite) {
		t.Errorf("frequency to phase NaN: %v", err)
	}
	// int64 input gives the same as float64.
	xi := []int64{0, 103, 123, 157, 166, 48, -96, -2, 111, 0}
	xf := make([]float64, len(xi))
	for i, v := range xi {
		xf[i] = float64(v)
	}
	di, _ := TDev(xi, 1000, nil)
	df, _ := TDev(xf, 1000, nil)
	if len(di) != len(df) || di[0] != df[0] {
		t.Errorf("int64 %+v, float64 %+v", di, df)
	}
}
