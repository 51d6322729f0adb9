package hca

import (
	"context"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSimRound is an agent's round (pre-round check, the algorithm
// with default parameters, the models' delivery) over the simulator at
// 10 % loss: what a round allocates, and the heap it leaves live (the
// models and the round's counts), per rank (B/rank, live-B/rank).
func BenchmarkSimRound(b *testing.B) {
	for _, alg := range []Algorithm{hca{}, hca3{}} {
		for _, nodes := range []int{64, 1024} {
			b.Run(fmt.Sprintf("%s/%d", alg.Name(), nodes), func(b *testing.B) {
				b.ReportAllocs()
				var before, after runtime.MemStats
				var r Round
				seed := uint64(0)
				for b.Loop() {
					seed++
					s, err := newSimNetwork(SimConfig{Nodes: nodes, Seed: seed, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 5_000, JitterNS: 1_000, Loss: 0.1})
					if err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					runtime.ReadMemStats(&before)
					if r = simDriver(s, s, alg, DefaultParams()).round(context.Background()); r.Err != nil || len(r.Undelivered) > 0 {
						b.Fatalf("seed %d: %v, undelivered %v", seed, r.Err, r.Undelivered)
					}
					runtime.GC()
					runtime.ReadMemStats(&after)
					runtime.KeepAlive(s)
				}
				runtime.KeepAlive(r)
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(nodes), "B/rank")
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(nodes), "live-B/rank")
			})
		}
	}
}
