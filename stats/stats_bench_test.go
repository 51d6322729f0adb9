package stats

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// heapDelta reports the live heap growth and the total bytes allocated by
// f, measured with runtime.ReadMemStats around it (after a GC each side).
// The GC and ReadMemStats calls are outside the timer.
func heapDelta(b *testing.B, f func()) (live, total uint64) {
	var before, after runtime.MemStats
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.StartTimer()
	f()
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.StartTimer()
	live = after.HeapInuse - min(after.HeapInuse, before.HeapInuse)
	return live, after.TotalAlloc - before.TotalAlloc
}

// BenchmarkSummarize10M streams ten million samples (normal, sigma 500 ns,
// generated on the fly, so the input costs no memory) through an
// Accumulator with default Config and summarises them: the histogram mode.
// heap-MB is the accumulator's live heap at the end, alloc-MB all it
// allocated.
func BenchmarkSummarize10M(b *testing.B) {
	const n = 10_000_000
	b.ReportAllocs()
	var live, total uint64
	for b.Loop() {
		r := rand.New(rand.NewPCG(1, 2))
		var a *Accumulator
		live, total = heapDelta(b, func() {
			a, _ = NewAccumulator(Config{Bounds: []int64{500, 1000}})
			for range n {
				a.Add(int64(500 * r.NormFloat64()))
			}
			if _, err := a.Summary(); err != nil {
				b.Fatal(err)
			}
		})
		runtime.KeepAlive(a)
	}
	b.ReportMetric(float64(live)/(1<<20), "heap-MB")
	b.ReportMetric(float64(total)/(1<<20), "alloc-MB")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/sample")
}

// BenchmarkSummarizeDay is a day of 1 Hz samples: exact mode.
func BenchmarkSummarizeDay(b *testing.B) {
	xs := make([]int64, 86400)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = int64(500 * r.NormFloat64())
	}
	b.ReportAllocs()
	for b.Loop() {
		if s, err := Summarize(xs, Config{}); err != nil || !s.Exact {
			b.Fatal(err)
		}
	}
}

func whiteFM(n int) []int64 {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]int64, n)
	for i := 1; i < n; i++ {
		x[i] = x[i-1] + int64(100*r.NormFloat64())
	}
	return x
}

// benchStability runs ADEV, MDEV, TDEV and MTIE over all octaves of an
// n-sample int64 phase series; the series itself (8n bytes) is allocated
// before the timer and not counted.
func benchStability(b *testing.B, n int) {
	x := whiteFM(n)
	b.ReportAllocs()
	b.ResetTimer()
	var live, total uint64
	for b.Loop() {
		live, total = heapDelta(b, func() {
			for _, f := range []func([]int64, int64, []int) ([]Deviation, error){ADev[int64], MDev[int64], TDev[int64], MTIE[int64]} {
				if _, err := f(x, 1e9, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.ReportMetric(float64(live)/(1<<20), "heap-MB")
	b.ReportMetric(float64(total)/(1<<20), "alloc-MB")
}

func BenchmarkStabilityDay(b *testing.B) { benchStability(b, 86400) }
func BenchmarkStability10M(b *testing.B) { benchStability(b, 10_000_000) }

func BenchmarkADev10M(b *testing.B) {
	x := whiteFM(10_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ADev(x, 1e9, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkADevDay(b *testing.B) {
	x := whiteFM(86400)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ADev(x, 1e9, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFitDriftDay(b *testing.B) {
	n := 86400
	t, x := make([]int64, n), whiteFM(n)
	for i := range t {
		t[i] = int64(i) * 1e9
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FitDrift(t, x); err != nil {
			b.Fatal(err)
		}
	}
}
