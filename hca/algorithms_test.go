package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/monagent/monagent/timebase"
)

const tenSeconds = 10_000_000_000

// lanSim is the network of the accuracy tests: 20 µs one way, exponential
// jitter of 1 µs mean per message, 2 µs processing, clocks within ±100 ppm
// and ±1 s.
func lanSim(t *testing.T, p int, seed uint64) *simNetwork {
	return mustSim(t, SimConfig{
		Nodes: p, Seed: seed, DriftPPM: 100, OffsetNS: 1_000_000_000,
		LatencyNS: 20_000, JitterNS: 1_000, ProcessingNS: 2_000,
		StartNS: 1_000_000_000,
	})
}

// accuracyParams spread each line over 29 × 200 ms = 5.8 s.
func accuracyParams() Params {
	p := DefaultParams()
	p.Fitpoints = 30
	p.SpacingNS = 200_000_000
	return p
}

type accuracy struct {
	atSync, after10s int64 // max |error| over ranks (ns)
	driftSpread      int64 // max |d_r − d_0| × 10 s (ns): what drift alone does in 10 s
	covered          int   // ranks whose error at sync is within 3 × Uncertainty
	coveredAfter     int   // ranks whose error 10 s later is within 3 × Uncertainty
}

// measure checks res on s: the max |model error| over all ranks right at the
// end of the sync and over the following 10 s of simulated time.
func measure(t *testing.T, s *simNetwork, res Result) accuracy {
	t.Helper()
	if len(res.Models) != s.Size() {
		t.Fatalf("%d models for %d ranks", len(res.Models), s.Size())
	}
	if res.Models[0] != timebase.Identity {
		t.Errorf("root model %+v, want the identity", res.Models[0])
	}
	var a accuracy
	for r := 1; r < s.Size(); r++ {
		now := s.Now(r)
		end := now + tenSeconds + int64(s.Drift(r)*tenSeconds)
		e0 := s.ModelError(r, res.Models[r], now, now, 1)
		a.atSync = max(a.atSync, e0)
		e10 := s.ModelError(r, res.Models[r], end, end, 1)
		a.after10s = max(a.after10s, s.ModelError(r, res.Models[r], now, end, tenSeconds/10))
		if e10 <= 3*res.Models[r].Uncertainty(end) {
			a.coveredAfter++
		}
		a.driftSpread = max(a.driftSpread, int64(math.Abs(s.Drift(r)-s.Drift(0))*tenSeconds))
		if e0 <= 3*res.Models[r].Uncertainty(now) {
			a.covered++
		}
	}
	return a
}

func TestAlgorithmsAccuracy(t *testing.T) {
	// Bounds (ns) on the max |error| over all ranks, from the sim's figures.
	// A fitpoint is the median of 10 samples, each one message's exponential
	// jitter minus the mean (σ ≈ 1 µs/√10 ≈ 0.32 µs, bias (ln 2 − 1) × 1 µs
	// ≈ −0.31 µs); the cached mean RTT of 20 ping-pongs adds a per-pair error
	// of σ ≈ 0.16 µs. A least-squares line over 30 fitpoints 200 ms apart has
	// a slope error of 0.32 µs/√Sxx, √Sxx = 0.2 s × √(30·899/12) ≈ 9.5 s, so
	// 0.034 ppm, 0.34 µs per 10 s.
	//  - JK fits each rank against the root: σ ≈ 0.2 µs at sync, 0.5 µs 10 s
	//    later (the line's mean is 3 s before the end), plus the bias.
	//  - HCA merges up to ⌈log2 p⌉ = 6 slopes (σ ≈ 0.083 ppm, 0.83 µs per
	//    10 s) and re-measures intercepts with SKaMPI's interval, whose
	//    midpoint is unbiased on symmetric links (σ ≈ 30 ns for 30 ping-pongs).
	//  - HCA3 adds the fitpoint bias and RTT error at every level down the
	//    tree (6 × 0.31 µs) and its top models are extrapolated over the whole
	//    sync (≈ 35 s for p = 33: ≈ 1.2 µs σ).
	// Each bound is the bias plus about 5σ.
	bounds := map[string]struct{ atSync, after10s int64 }{
		"jk":  {1_500, 3_000},
		"hca": {500, 4_500},
		// HCA2's intercepts are measured during the tree and carried along
		// each level's slope to the end of the sync (up to ≈ 30 s at
		// p = 33: ≈ 1 µs σ per level).
		"hca2": {4_000, 8_000},
		"hca3": {4_000, 9_000},
	}
	for _, p := range []int{7, 16, 33} {
		for _, alg := range Algorithms() {
			t.Run(fmt.Sprintf("%s/p=%d", alg.Name(), p), func(t *testing.T) {
				s := lanSim(t, p, uint64(100+p))
				res, err := alg.Sync(context.Background(), s, accuracyParams())
				if err != nil {
					t.Fatal(err)
				}
				a := measure(t, s, res)
				st := s.Stats()
				t.Logf("%-6s p=%2d  max|err| at sync %6d ns, after 10 s %8d ns (drift alone %8d ns); exchanges %6d, messages %6d, sim duration %6.2f s, 3σ covers %d/%d at sync",
					alg.Name(), p, a.atSync, a.after10s, a.driftSpread, res.Exchanges, res.Messages, float64(res.DurationNS)/1e9, a.covered, p-1)
				if res.Exchanges != st.Exchanges || res.DurationNS != s.Elapsed() {
					t.Errorf("result counts %d exchanges over %d ns, sim %d over %d", res.Exchanges, res.DurationNS, st.Exchanges, s.Elapsed())
				}
				if res.Messages < 2*res.Exchanges || res.Rejected != 0 || res.Lost != 0 {
					t.Errorf("messages %d for %d exchanges, %d rejected, %d lost", res.Messages, res.Exchanges, res.Rejected, res.Lost)
				}
				if alg.Name() == "skampi" || alg.Name() == "tree" {
					// Offset-only: ranks measured early in the sync have
					// drifted by its end, so the bound at sync is the
					// interval plus the drift over the sync's duration.
					if b := 500 + a.driftSpread*res.DurationNS/tenSeconds; a.atSync > b {
						t.Errorf("at sync %d ns, want < %d", a.atSync, b)
					}
					// 10 s later off by about the drift between the clocks.
					if a.after10s < a.driftSpread/2 || a.after10s < 100*a.atSync {
						t.Errorf("after 10 s %d ns: want about the drift spread %d ns and ≫ %d ns at sync", a.after10s, a.driftSpread, a.atSync)
					}
					if a.coveredAfter != p-1 {
						t.Errorf("worst-slope uncertainty covers %d of %d ranks after 10 s", a.coveredAfter, p-1)
					}
					return
				}
				b := bounds[alg.Name()]
				if a.atSync > b.atSync || a.after10s > b.after10s {
					t.Errorf("max error %d ns at sync, %d ns after 10 s; bounds %d, %d", a.atSync, a.after10s, b.atSync, b.after10s)
				}
				if a.after10s*100 > a.driftSpread {
					t.Errorf("after 10 s %d ns, not 100× better than modelling no drift (%d ns)", a.after10s, a.driftSpread)
				}
				if alg.Name() == "hca" && a.covered != p-1 {
					// HCA's floor is the SKaMPI interval's half-width, a
					// hard bound on a symmetric link.
					t.Errorf("hca: 3 × Uncertainty covers %d of %d ranks at sync", a.covered, p-1)
				}
			})
		}
	}
}

func TestTreeRounds(t *testing.T) {
	for _, p := range []int{1, 2, 3, 5, 7, 8, 16, 33, 100, 4096, 4097} {
		rounds, extra := treeRounds(p)
		k := 0
		for 1<<(k+1) <= p {
			k++
		}
		if len(rounds) != k {
			t.Errorf("p=%d: %d rounds, want %d", p, len(rounds), k)
		}
		// Bottom-up order: extra, then rounds 0..k-1. Every non-root rank
		// is a client exactly once, and after that never a reference (it
		// has shipped its subtree), and every pair is within range.
		seen := make([]bool, p)
		done := make([]bool, p)
		for _, round := range append([][]pair{extra}, rounds...) {
			for _, pr := range round {
				if pr.client <= 0 || pr.client >= p || pr.ref < 0 || pr.ref >= p || pr.client == pr.ref {
					t.Fatalf("p=%d: bad pair %+v", p, pr)
				}
				if seen[pr.client] || done[pr.ref] {
					t.Fatalf("p=%d: pair %+v out of order", p, pr)
				}
				seen[pr.client], done[pr.client] = true, true
			}
		}
		for r := 1; r < p; r++ {
			if !seen[r] {
				t.Errorf("p=%d: rank %d never synchronised", p, r)
			}
		}
	}
}

// lineError is |m's line − the truth| at node r's local time x, before
// either is rounded to whole nanoseconds.
func lineError(s *simNetwork, r int, m timebase.LinearModel, x int64) float64 {
	line := float64(m.Intercept) + m.Slope*float64(x-m.Origin)
	return math.Abs(line - s.TrueOffsetNS(r, x))
}

// noiselessSizes are the network sizes of the noiseless tests: tree depths
// 1, 2, 3, 4, 7, 10 and 12.
var noiselessSizes = []int{2, 3, 5, 16, 100, 1024, 4096}

// noiselessErrors syncs alg over cfg (its Nodes set to size) and returns
// the max |error| of the models' lines against the unrounded truth over the
// 10 s after the sync, and back over the sync itself.
func noiselessErrors(t *testing.T, alg Algorithm, cfg SimConfig, p Params) (after, during float64, res Result) {
	t.Helper()
	s := mustSim(t, cfg)
	start := make([]int64, cfg.Nodes)
	for r := range start {
		start[r] = s.Now(r)
	}
	res, err := alg.Sync(context.Background(), s, p)
	if err != nil {
		t.Fatal(err)
	}
	for r := 1; r < cfg.Nodes; r++ {
		m, now := res.Models[r], s.Now(r)
		for k := range int64(11) {
			after = max(after, lineError(s, r, m, now+k*1_000_000_000))
		}
		for x := start[r]; x < now; x += (now - start[r]) / 10 {
			during = max(during, lineError(s, r, m, x))
		}
	}
	return after, during, res
}

// noiselessParams: 100 fitpoints 2 s apart of 9 exchanges each, and 40
// ping-pongs per SKaMPI offset.
func noiselessParams() Params {
	p := DefaultParams()
	p.Fitpoints, p.Exchanges, p.SpacingNS = 100, 9, 2_000_000_000
	p.RTTWarmup, p.RTTExchanges = 0, 10
	p.MinPingPongs, p.MaxPingPongs = 40, 40
	return p
}

// TestMergeExactOnExactReadings is the merge exactness: on a
// noiseless network whose clocks read exactly — drifts of whole ppm, and
// every message taking whole milliseconds (1 ms each way, 2 ms of
// processing), so that every reading falls on a millisecond of base time,
// where C_i(t) = t + d_i·t + o_i is a whole number of nanoseconds — every
// drift-modelling algorithm must recover every model to < 1 ns at every
// depth up to 4,096 nodes. Whatever error is left comes from the
// arithmetic of fitting, merging and mapping alone, so the test holds it
// to 0.01 ns.
func TestMergeExactOnExactReadings(t *testing.T) {
	for _, size := range noiselessSizes {
		rng := rand.New(rand.NewPCG(uint64(size), 5))
		drifts := make([]float64, size)
		for i := range drifts {
			drifts[i] = float64(rng.IntN(201)-100) * 1e-6
		}
		cfg := SimConfig{Nodes: size, Seed: 3, Drifts: drifts, OffsetNS: 1e9, LatencyNS: 1_000_000, ProcessingNS: 2_000_000, StartNS: 1e9}
		for _, alg := range []Algorithm{jonesKoenig{}, hca{}, hca2{}, hca3{}} {
			t.Run(fmt.Sprintf("%s/p=%d", alg.Name(), size), func(t *testing.T) {
				if testing.Short() && size == 4096 && alg.Name() == "jk" {
					t.Skip("short: p=4096 only for the trees")
				}
				// Exact readings need no averaging: 30 fitpoints and 10
				// ping-pongs per offset.
				p := noiselessParams()
				p.Fitpoints, p.MinPingPongs, p.MaxPingPongs = 30, 10, 10
				after, during, res := noiselessErrors(t, alg, cfg, p)
				t.Logf("%-4s p=%4d depth %2d: max |error| %.2g ns over the 10 s after the sync, %.2g ns during it (sim %3.0f s)",
					alg.Name(), size, bits.Len(uint(size-1)), after, during, float64(res.DurationNS)/1e9)
				if after >= 0.01 || during >= 0.01 {
					t.Errorf("max |error| %.6f ns after the sync, %.6f ns during it: want < 0.01 ns on exact readings", after, during)
				}
			})
		}
	}
}

// TestNoiselessMergeExact: the same noiseless network with the usual 20 µs
// links and random drifts, so that every reading is rounded to whole
// nanoseconds. Each sample combines three readings (σ ≈ 0.35 ns), and the
// trees carry that rounding down their depth. JK (one level), HCA
// (intercepts re-measured against the root) and HCA3 must recover every
// model to < 1 ns at any size up to 4,096; HCA2, whose SKaMPI intercept of
// every level adds its own rounding, to < 1.2 ns (0.83–1.08 ns at p = 4,096
// over seeds 1–6; 1.68 ns with 30 fitpoints and 10 ping-pongs). All levels
// are measured in the same sweeps, so no level's slope is extrapolated over
// the other levels' time (measured in rounds one after the other, with 30
// fitpoints, HCA2 erred 14.9 ns and HCA3 8.8 ns at p = 4,096). Errors are
// over the 10 s after the sync and, for JK, whose one fit spans the sync,
// also back over the whole sync.
func TestNoiselessMergeExact(t *testing.T) {
	for _, size := range noiselessSizes {
		for _, alg := range []Algorithm{jonesKoenig{}, hca{}, hca2{}, hca3{}} {
			t.Run(fmt.Sprintf("%s/p=%d", alg.Name(), size), func(t *testing.T) {
				if testing.Short() && size == 4096 && (alg.Name() == "jk" || alg.Name() == "hca2") {
					t.Skip("short: p=4096 only for hca and hca3")
				}
				cfg := SimConfig{Nodes: size, Seed: 3, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 20_000, ProcessingNS: 2_000, StartNS: 1e9}
				t0 := time.Now()
				after, during, res := noiselessErrors(t, alg, cfg, noiselessParams())
				depth := bits.Len(uint(size - 1))
				t.Logf("%-4s p=%4d depth %2d: max |error| %5.2f ns over the 10 s after the sync, %5.2f ns during it (sim %4.0f s, took %v)",
					alg.Name(), size, depth, after, during, float64(res.DurationNS)/1e9, time.Since(t0).Round(time.Millisecond))
				bound, boundDuring := 1.0, 1.0
				switch alg.Name() {
				case "hca":
					// The intercepts are measured at the end and carried
					// back along the merged slopes.
					boundDuring = math.Inf(1)
				case "hca3":
					boundDuring = math.Inf(1)
				case "hca2":
					bound, boundDuring = 1.2, math.Inf(1)
				}
				if after >= bound || during >= boundDuring {
					t.Errorf("max |error| %.2f ns after the sync (want < %.2f), %.2f ns during it (want < %.2f)", after, bound, during, boundDuring)
				}
			})
		}
	}
}

func TestSyncLossAndRejection(t *testing.T) {
	ctx := context.Background()
	// 5 % loss: retried and counted, and the models are as good.
	s := mustSim(t, SimConfig{Nodes: 9, Seed: 8, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 20_000, JitterNS: 1_000, Loss: 0.05})
	res, err := hca{}.Sync(ctx, s, accuracyParams())
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost == 0 || res.Lost != s.Stats().Lost {
		t.Errorf("lost %d, sim lost %d", res.Lost, s.Stats().Lost)
	}
	if a := measure(t, s, res); a.after10s > 4_500 {
		t.Errorf("with loss: %d ns after 10 s", a.after10s)
	}
	// Total loss: the sync fails with ErrLost, not a hang or a bad model.
	dead := mustSim(t, SimConfig{Nodes: 3, Seed: 8, Loss: 0.999999})
	for _, alg := range Algorithms() {
		if _, err := alg.Sync(ctx, dead, DefaultParams()); !errors.Is(err, ErrLost) {
			t.Errorf("%s on a dead network: %v, want ErrLost", alg.Name(), err)
		}
	}
	// Absurd slopes: a clock 800 ppm fast is rejected, re-measured
	// Retries times, and then reported.
	fast := mustSim(t, SimConfig{Nodes: 2, Seed: 8, Drifts: []float64{0, 800e-6}, LatencyNS: 1_000})
	p := DefaultParams()
	p.Retries = 2
	if _, err = (jonesKoenig{}).Sync(ctx, fast, p); !errors.Is(err, ErrAbsurdSlope) {
		t.Fatalf("800 ppm: %v, want ErrAbsurdSlope", err)
	}
	if want := int64(p.RTTWarmup + p.RTTExchanges + 3*p.Fitpoints*p.Exchanges); fast.Stats().Exchanges != want {
		t.Errorf("%d exchanges, want RTT + 3 attempts = %d", fast.Stats().Exchanges, want)
	}
	// A fit spoiled once (the reference's answers ramp by 10 µs per
	// exchange during the first attempt: 1000 ppm) is rejected, counted,
	// and re-measured into a good model.
	sim := lanSim(t, 2, 4)
	spoilt := &ramp{simNetwork: sim, until: int64(p.RTTWarmup + p.RTTExchanges + p.Fitpoints*p.Exchanges)}
	res, err = jonesKoenig{}.Sync(ctx, spoilt, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 1 {
		t.Errorf("%d rejections, want 1", res.Rejected)
	}
	if a := measure(t, sim, res); a.after10s > 3_000 {
		t.Errorf("after a rejection: %d ns after 10 s", a.after10s)
	}
}

// TestSyncClockStep: rank 2's clock steps 100 µs forward half way through
// the fits. Its pairs' fitpoints then lie on two lines 100 µs apart, whose
// fit is not steep enough to be absurd (~25 ppm) but scatters ~50 µs about
// itself: every drift-modelling algorithm must reject it (ErrScattered,
// counted), re-measure the pair and model the stepped clock as well as a
// clean run does.
func TestSyncClockStep(t *testing.T) {
	const step = 100_000
	for _, alg := range []Algorithm{jonesKoenig{}, hca{}, hca2{}, hca3{}} {
		t.Run(alg.Name(), func(t *testing.T) {
			sim := lanSim(t, 5, 21)
			st := &stepper{simNetwork: sim, rank: 2, step: step, at: sim.Elapsed() + 3_000_000_000}
			res, err := alg.Sync(context.Background(), st, accuracyParams())
			if err != nil {
				t.Fatal(err)
			}
			if res.Rejected < 1 {
				t.Errorf("%d fits rejected, want the stepped pairs' rejected", res.Rejected)
			}
			var worst float64
			for r := 1; r < 5; r++ {
				x := sim.Now(r)
				truth := sim.TrueOffsetNS(r, x)
				if r == st.rank {
					x += step
					truth += step
				}
				worst = max(worst, math.Abs(float64(res.Models[r].Offset(x))-truth))
			}
			t.Logf("%s: %d fits rejected, max |error| at the sync's end %.0f ns", alg.Name(), res.Rejected, worst)
			if worst > 1_000 {
				t.Errorf("max |error| %.0f ns at the sync's end after a 100 µs step, want < 1 µs", worst)
			}
		})
	}
}

// stepper steps rank's clock by step ns once the simulated time passes at:
// its readings from then on are step later.
type stepper struct {
	*simNetwork
	rank     int
	step, at int64
}

func (s *stepper) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	e, err := s.simNetwork.Exchange(ctx, from, to)
	if err != nil || s.Elapsed() < s.at {
		return e, err
	}
	if from == s.rank {
		e.Send += s.step
		e.Recv += s.step
	}
	if to == s.rank {
		e.Remote += s.step
	}
	return e, nil
}

// ramp spoils the answers of its first until exchanges with a ramp of 10 µs
// per exchange.
type ramp struct {
	*simNetwork
	n, until int64
}

func (r *ramp) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	e, err := r.simNetwork.Exchange(ctx, from, to)
	if r.n < r.until {
		e.Remote -= 10_000 * r.n
	}
	r.n++
	return e, err
}

func TestSyncBadInput(t *testing.T) {
	ctx := context.Background()
	s := mustSim(t, SimConfig{Nodes: 1})
	for _, alg := range Algorithms() {
		res, err := alg.Sync(ctx, s, DefaultParams())
		if err != nil || len(res.Models) != 1 || res.Exchanges != 0 {
			t.Errorf("%s on one node: %+v, %v", alg.Name(), res, err)
		}
		bad := DefaultParams()
		bad.Fitpoints = 1
		if _, err := alg.Sync(ctx, s, bad); err == nil {
			t.Errorf("%s accepted 1 fitpoint", alg.Name())
		}
	}
	if _, err := AlgorithmByName("hca4"); err == nil {
		t.Error("unknown algorithm found")
	}
	for _, name := range []string{"skampi", "tree", "jk", "hca", "hca2", "hca3"} {
		if a, err := AlgorithmByName(name); err != nil || a.Name() != name {
			t.Errorf("%s: %v, %v", name, a, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (hca{}).Sync(cctx, lanSim(t, 4, 1), DefaultParams()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestSyncDeterministic(t *testing.T) {
	for _, alg := range Algorithms() {
		run := func() Result {
			res, err := alg.Sync(context.Background(), lanSim(t, 11, 77), DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		a, b := run(), run()
		if a.Exchanges != b.Exchanges || a.DurationNS != b.DurationNS {
			t.Errorf("%s: runs differ: %d/%d exchanges, %d/%d ns", alg.Name(), a.Exchanges, b.Exchanges, a.DurationNS, b.DurationNS)
		}
		for r := range a.Models {
			if a.Models[r] != b.Models[r] {
				t.Errorf("%s: rank %d: %+v vs %+v", alg.Name(), r, a.Models[r], b.Models[r])
			}
		}
	}
}
