package hca

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestSimParallelTime(t *testing.T) {
	s := mustSim(t, SimConfig{Nodes: 6, Seed: 1, LatencyNS: 1_000})
	ctx := context.Background()
	// Pair i runs i+1 exchanges of 2 µs each: the round takes as long as
	// the longest, 3 × 2 µs, not the sum 12 µs.
	err := s.Parallel(ctx, 3, func(ctx context.Context, i int) error {
		if got := s.Elapsed(); got != 0 {
			t.Errorf("call %d starts at %d ns, want 0", i, got)
		}
		for range i + 1 {
			if _, err := s.Exchange(ctx, 2*i, 2*i+1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Elapsed(); got != 6_000 {
		t.Errorf("parallel round took %d ns, want 6000", got)
	}
	if st := s.Stats(); st.Exchanges != 6 {
		t.Errorf("%d exchanges, want 6", st.Exchanges)
	}
	// The first error is returned, the remaining calls are not made, and
	// time still ends at the latest call's end.
	boom := errors.New("boom")
	var calls []int
	err = s.Parallel(ctx, 4, func(ctx context.Context, i int) error {
		calls = append(calls, i)
		if i == 1 {
			return boom
		}
		s.Advance(10_000)
		return nil
	})
	if !errors.Is(err, boom) || !slices.Equal(calls, []int{0, 1}) {
		t.Errorf("error %v after calls %v, want boom after [0 1]", err, calls)
	}
	if got := s.Elapsed(); got != 16_000 {
		t.Errorf("after the failed round: %d ns, want 16000", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Parallel(cctx, 2, func(context.Context, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestDisjointBatches(t *testing.T) {
	rounds, extra := treeRounds(13)
	for _, round := range append([][]pair{extra}, rounds...) {
		idx := make([]int, len(round))
		for i := range idx {
			idx[i] = i
		}
		if b := disjointBatches(round, idx); len(b) != 1 || len(b[0]) != len(round) {
			t.Errorf("tree round %v split into %v", round, b)
		}
	}
	jk := []pair{{1, 0}, {2, 0}, {3, 0}}
	if b := disjointBatches(jk, []int{0, 1, 2}); len(b) != 3 {
		t.Errorf("JK pairs batched as %v, want one each", b)
	}
	mixed := []pair{{1, 0}, {3, 2}, {2, 4}, {5, 6}}
	if b := disjointBatches(mixed, []int{0, 1, 2, 3}); fmt.Sprint(b) != "[[0 1] [2 3]]" {
		t.Errorf("mixed pairs batched as %v", b)
	}
}

// TestParallelDurationJKvsHCA checks the costs of the schedules with the
// rounds run in parallel: JK is O(p·F) exchanges all through the root,
// HCA O(log p · F) tree rounds plus O(p) short SKaMPI measurements, so at
// 64 nodes with no spacing JK must take at least 4× as long.
func TestParallelDurationJKvsHCA(t *testing.T) {
	p := DefaultParams()
	p.SpacingNS = 0
	dur := map[string]int64{}
	for _, alg := range []Algorithm{jonesKoenig{}, hca{}, hca2{}, hca3{}, treeOffsetOnly{}, skampiOffsetOnly{}} {
		s := lanSim(t, 64, 64)
		res, err := alg.Sync(context.Background(), s, p)
		if err != nil {
			t.Fatalf("%s: %v", alg.Name(), err)
		}
		if res.DurationNS != s.Elapsed() {
			t.Errorf("%s: duration %d, sim elapsed %d", alg.Name(), res.DurationNS, s.Elapsed())
		}
		dur[alg.Name()] = res.DurationNS
		t.Logf("%-6s p=64 spacing 0: sim duration %7.2f ms, %6d exchanges", alg.Name(), float64(res.DurationNS)/1e6, res.Exchanges)
	}
	ratio := float64(dur["jk"]) / float64(dur["hca"])
	t.Logf("JK/HCA duration at p=64: %.2f×", ratio)
	if ratio < 4 {
		t.Errorf("JK takes %.2f× HCA's time at 64 nodes, want ≥ 4×", ratio)
	}
	// The all-tree variants have no O(p) phase at the root.
	if dur["hca2"] >= dur["hca"] || dur["tree"] >= dur["skampi"] {
		t.Errorf("hca2 %d ns vs hca %d ns, tree %d ns vs skampi %d ns: tree rounds should be shorter", dur["hca2"], dur["hca"], dur["tree"], dur["skampi"])
	}
}

// goParallel runs Parallel's calls on goroutines, as a real network does.
type goParallel struct{ *simNetwork }

func (g goParallel) Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func TestSyncConcurrentRounds(t *testing.T) {
	// Real concurrency (the Sim serialises the exchanges in whatever order
	// they come): every count adds up and the models are as good.
	for _, alg := range Algorithms() {
		t.Run(alg.Name(), func(t *testing.T) {
			s := mustSim(t, SimConfig{Nodes: 19, Seed: 5, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 20_000, JitterNS: 1_000, Loss: 0.02})
			res, err := alg.Sync(context.Background(), goParallel{s}, accuracyParams())
			if err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if res.Exchanges != st.Exchanges || res.Lost != st.Lost || res.Lost == 0 {
				t.Errorf("result %d exchanges %d lost, sim %d and %d", res.Exchanges, res.Lost, st.Exchanges, st.Lost)
			}
			a := measure(t, s, res)
			if alg.Name() != "skampi" && alg.Name() != "tree" && a.after10s > 10_000 {
				t.Errorf("max error %d ns after 10 s", a.after10s)
			}
		})
	}
}
