package stats

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

func int64s(b []byte) []int64 {
	xs := make([]int64, len(b)/8)
	for i := range xs {
		xs[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return xs
}

func fuzzBytes(xs ...int64) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

// FuzzSummarize checks that Summarize never panics and keeps its
// invariants in both modes: min <= percentiles <= max, percentiles
// non-decreasing, std >= 0 and finite, shares in [0, 1], histogram mode
// within its error bound of exact mode, CDF and histogram consistent.
func FuzzSummarize(f *testing.F) {
	f.Add(fuzzBytes(1, 2, 3), int8(0))
	f.Add(fuzzBytes(math.MinInt64, math.MaxInt64, 0, -1), int8(-1))
	f.Add(fuzzBytes(-500, 1e9, 7, 7, 7, -1e12), int8(2))
	f.Add([]byte{}, int8(0))
	f.Fuzz(func(t *testing.T, b []byte, limit int8) {
		xs := int64s(b)
		cfg := Config{ExactLimit: int(limit), Bounds: []int64{0, 100, math.MaxInt64}, Probabilities: []float64{0, 0.1, 0.5, 0.75, 0.99, 0.999, 1}}
		a, err := NewAccumulator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.AddSlice(xs)
		s, err := a.Summary()
		if len(xs) == 0 {
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("empty: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.N != int64(len(xs)) || !(s.Std >= 0) || math.IsInf(s.Std, 0) || !(s.RMS >= 0) || math.IsInf(s.RMS, 0) {
			t.Fatalf("bad moments %+v", s)
		}
		if s.Mean < float64(s.Min) || s.Mean > float64(s.Max) {
			t.Fatalf("mean %v outside [%d, %d]", s.Mean, s.Min, s.Max)
		}
		prev := math.Inf(-1)
		for _, q := range s.Percentiles {
			if q.Value < float64(s.Min) || q.Value > float64(s.Max) || q.Value < prev {
				t.Fatalf("p%v = %v: min %d max %d prev %v", q.P, q.Value, s.Min, s.Max, prev)
			}
			prev = q.Value
		}
		for _, q := range s.AbsPercentiles {
			if q.Value < 0 || q.Value > float64(s.MaxAbs) {
				t.Fatalf("|p%v| = %v, max |x| %d", q.P, q.Value, s.MaxAbs)
			}
		}
		for _, sh := range s.Shares {
			if sh.Fraction < 0 || sh.Fraction > 1 {
				t.Fatalf("share %+v", sh)
			}
		}
		// |x| <= MaxInt64 holds for every sample but MinInt64.
		if s.Shares[2].Count != s.N-countMin(xs) {
			t.Fatalf("share <= MaxInt64: %d of %d, %d MinInt64", s.Shares[2].Count, s.N, countMin(xs))
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		for _, q := range s.Percentiles {
			want, bound := exactType7(sorted, q.P)
			if d := math.Abs(q.Value - want); d > s.MaxRelErr*bound+1e-9*math.Abs(want) {
				t.Fatalf("p%v = %v, exact %v (exact mode %v)", q.P, q.Value, want, s.Exact)
			}
		}
		pts, err := a.CDF(8)
		if err != nil || len(pts) > 8 || pts[len(pts)-1].F != 1 {
			t.Fatalf("cdf %v %v", pts, err)
		}
		h, err := a.Histogram(7)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, c := range h.Counts {
			total += c
		}
		if total != s.N {
			t.Fatalf("histogram holds %d of %d", total, s.N)
		}
	})
}

func countMin(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		if x == math.MinInt64 {
			n++
		}
	}
	return n
}

// FuzzDeviations checks that the stability functions never panic, return
// finite non-negative values or an error (never both), use octaves of tau0,
// and keep MTIE non-decreasing in tau and within the series' range.
func FuzzDeviations(f *testing.F) {
	f.Add(fuzzBytes(0, 103, 123, 157, 166, 48, -96, -2, 111, 0), int64(1e9))
	f.Add(fuzzBytes(math.MinInt64, math.MaxInt64, 0), int64(1))
	f.Add(fuzzBytes(5), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, tau0 int64) {
		xs := int64s(b)
		for name, fn := range map[string]func([]int64, int64, []int) ([]Deviation, error){
			"adev": ADev[int64], "mdev": MDev[int64], "tdev": TDev[int64], "mtie": MTIE[int64],
		} {
			devs, err := fn(xs, tau0, nil)
			if err != nil {
				if len(devs) != 0 {
					t.Fatalf("%s: error %v with results", name, err)
				}
				continue
			}
			if tau0 <= 0 {
				t.Fatalf("%s: tau0 %d accepted", name, tau0)
			}
			prev := 0.0
			for i, d := range devs {
				if !(d.Value >= 0) || math.IsInf(d.Value, 0) || d.N < 1 || d.M != 1<<i || d.Tau != int64(d.M)*tau0 {
					t.Fatalf("%s: %+v", name, d)
				}
				if name == "mtie" {
					if d.Value < prev {
						t.Fatalf("mtie decreases: %+v", devs)
					}
					if lo, hi := slices.Min(xs), slices.Max(xs); d.Value > float64(hi)-float64(lo) {
						t.Fatalf("mtie %v above range %d..%d", d.Value, lo, hi)
					}
					prev = d.Value
				}
			}
		}
	})
}
