package hca

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// deadRank is a Sim on which every exchange with one rank is lost, after
// the Sim's timeout.
type deadRank struct {
	*simNetwork
	rank int
}

func (d deadRank) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	if from != d.rank && to != d.rank {
		return d.simNetwork.Exchange(ctx, from, to)
	}
	d.simNetwork.Advance(1_000_000)
	return Exchange{}, ErrLost
}

// dependents are the ranks whose models an algorithm derives through
// rank's: for the tree algorithms its subtree (treeRounds' edges), for JK
// and SKaMPI, which measure every rank against the root, none.
func dependents(alg Algorithm, p, rank int) []int {
	if alg.Name() == "jk" || alg.Name() == "skampi" {
		return nil
	}
	var out []int
	for grew := true; grew; {
		grew = false
		for _, pr := range treePairs(p) {
			if !slices.Contains(out, pr.client) && (pr.ref == rank || slices.Contains(out, pr.ref)) {
				out, grew = append(out, pr.client), true
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestSyncOneNodeTakesNoTime: a single node is synchronised by definition:
// no exchange, no message, no time (the fitting algorithms used to pause
// between the sweeps of no pairs, 5.8 s of "sync" for nothing).
func TestSyncOneNodeTakesNoTime(t *testing.T) {
	for _, alg := range Algorithms() {
		s := mustSim(t, SimConfig{Nodes: 1, Seed: 1, LatencyNS: 5_000})
		res, err := alg.Sync(context.Background(), s, DefaultParams())
		if err != nil || len(res.Models) != 1 || res.Exchanges != 0 || res.Messages != 0 || res.DurationNS != 0 || s.Elapsed() != 0 {
			t.Errorf("%s on one node: %v; took %d ns (sim %d ns), %d exchanges, %d messages", alg.Name(), err, res.DurationNS, s.Elapsed(), res.Exchanges, res.Messages)
		}
	}
}

// TestSyncKeepGoing: one rank of 11 never answers. Without KeepGoing every
// algorithm fails with ErrLost, as the agent wants (its round fails); with
// it, exactly that rank and the ranks derived through it are listed in
// Failed, with zero models and errors that say why, and every other rank
// is modelled within its bound.
func TestSyncKeepGoing(t *testing.T) {
	const p = 11 // 8 in the tree's rounds and 3 in its extra round
	dead := 1 << 2
	for _, alg := range Algorithms() {
		t.Run(alg.Name(), func(t *testing.T) {
			params := accuracyParams()
			if _, err := alg.Sync(context.Background(), deadRank{lanSim(t, p, 3), dead}, params); !errors.Is(err, ErrLost) {
				t.Fatalf("without KeepGoing: %v, want ErrLost", err)
			}
			params.KeepGoing = true
			sim := lanSim(t, p, 3)
			res, err := alg.Sync(context.Background(), deadRank{sim, dead}, params)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]int{dead}, dependents(alg, p, dead)...)
			slices.Sort(want)
			var got []int
			for _, f := range res.Failed {
				got = append(got, f.Rank)
				if !errors.Is(f.Err, ErrLost) && !errors.Is(f.Err, errUpstream) {
					t.Errorf("rank %d failed with %v, want ErrLost or ErrUpstream", f.Rank, f.Err)
				}
				if res.Models[f.Rank] != (timebase.LinearModel{}) {
					t.Errorf("rank %d failed but has model %+v", f.Rank, res.Models[f.Rank])
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("failed ranks %v, want %v", got, want)
			}
			if res.GivenUp < 1 || res.Lost < res.GivenUp*int64(params.Retries+1) {
				t.Errorf("%d exchanges given up, %d lost: want each given up after %d lost tries", res.GivenUp, res.Lost, params.Retries+1)
			}
			clocks := Clocks{Drift: make([]float64, p), Offset: make([]int64, p)}
			for i := range p {
				clocks.Drift[i], clocks.Offset[i] = sim.Drift(i), sim.ClockOffset(i)
			}
			for _, c := range clocks.Evaluate(res, sim.cfg.StartNS+sim.Elapsed(), []int64{0, tenSeconds}) {
				if c.Ranks != p-1-len(want) || c.BoundCoverage != 1 {
					t.Errorf("%v after: %d ranks checked (want %d), bound covers %g (max |error| %d ns, bound %d ns)",
						c.AfterNS, c.Ranks, p-1-len(want), c.BoundCoverage, c.MaxAbsErrorNS, c.MaxBoundNS)
				}
			}
		})
	}
}

// TestSimExperimentUnderLoss: a lossy network gives a report, not an
// error: the ranks that failed with why, every lost try counted, and checks
// over the ranks that were synchronised only; a network on which no rank
// can be synchronised gives checks of no rank, which claim nothing.
func TestSimExperimentUnderLoss(t *testing.T) {
	for _, tc := range []struct {
		nodes    int
		loss     float64
		alg      string
		allFail  bool
		someFail bool
	}{
		{8, 0.1, "hca", false, false},  // the run: it failed with an error chain
		{64, 0.15, "jk", false, false}, // each of 63 pairs gives up on an exchange of ~900 with p ≈ 0.4: that fitpoint is left out (it failed the rank)
		{8, 0.5, "hca", true, true},    // an exchange is given up once in 16: no pair keeps half its fitpoints
	} {
		x := SimExperiment{Algorithm: tc.alg, Params: accuracyParams(), CheckAfter: []int64{0, tenSeconds},
			Network: SimConfig{Nodes: tc.nodes, Seed: 1, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 5_000, JitterNS: 1_000, Loss: tc.loss}}
		rep, err := x.Run(context.Background())
		if err != nil {
			t.Fatalf("%s, %d nodes, loss %g: %v", tc.alg, tc.nodes, tc.loss, err)
		}
		t.Logf("%s, %d nodes, loss %g: %d exchanges, %d lost, %d given up, %d of %d ranks failed, checks %+v",
			tc.alg, tc.nodes, tc.loss, rep.Exchanges, rep.Lost, rep.GivenUp, len(rep.Failed), tc.nodes-1, rep.Checks)
		if rep.Loss != tc.loss || rep.Lost == 0 || rep.GivenUp > rep.Lost || int(rep.GivenUp) < min(len(rep.Failed), 1) || rep.FitpointsSkipped > rep.GivenUp {
			t.Errorf("loss %g, %d lost, %d given up, %d ranks failed", rep.Loss, rep.Lost, rep.GivenUp, len(rep.Failed))
		}
		if n := len(rep.Failed); (n == tc.nodes-1) != tc.allFail || tc.someFail != (n > 0) {
			t.Errorf("%d of %d ranks failed", n, tc.nodes-1)
		}
		for _, f := range rep.Failed {
			if f.Rank < 1 || f.Rank >= tc.nodes || f.Error == "" {
				t.Errorf("failed rank %+v", f)
			}
		}
		for _, c := range rep.Checks {
			if c.Ranks != tc.nodes-1-len(rep.Failed) {
				t.Errorf("%v after: %d ranks checked, want the %d synchronised", c.AfterNS, c.Ranks, tc.nodes-1-len(rep.Failed))
			}
			if c.Ranks == 0 && c != (Check{AfterNS: c.AfterNS}) {
				t.Errorf("%v after: no rank to check, yet %+v", c.AfterNS, c)
			}
		}
	}
}

// TestSimHorizon: a Sim never runs past SimHorizonNS, where its int64
// times would soon overflow (a sync of 4 nodes over hour-long links
// reported -760138 h): the exchange or pause that would pass it fails with
// errSimHorizon and changes nothing, and a sync ends with that error even
// with KeepGoing rather than fail one rank after another.
func TestSimHorizon(t *testing.T) {
	ctx := context.Background()
	s := mustSim(t, SimConfig{Nodes: 2, LatencyNS: SimHorizonNS/2 + 1})
	if _, err := s.Exchange(ctx, 0, 1); !errors.Is(err, errSimHorizon) || s.Elapsed() != 0 || s.Stats() != (simStats{Exchanges: 1}) {
		t.Errorf("an exchange of two messages of over half the horizon: %v; elapsed %d ns, stats %+v", err, s.Elapsed(), s.Stats())
	}
	s = mustSim(t, SimConfig{Nodes: 2})
	if err := s.Pause(ctx, SimHorizonNS); err != nil {
		t.Fatalf("pause up to the horizon: %v", err)
	}
	if err := s.Pause(ctx, 1); !errors.Is(err, errSimHorizon) || s.Elapsed() != SimHorizonNS {
		t.Errorf("pause past the horizon: %v; elapsed %d ns", err, s.Elapsed())
	}
	p := DefaultParams()
	p.KeepGoing = true
	p.SpacingNS = SimHorizonNS / int64(p.Fitpoints-1) * 2
	for _, alg := range []Algorithm{jonesKoenig{}, hca{}} {
		res, err := alg.Sync(ctx, mustSim(t, SimConfig{Nodes: 4}), p)
		if !errors.Is(err, errSimHorizon) || len(res.Failed) != 0 {
			t.Errorf("%s with fitpoints spaced past the horizon: %v, %d ranks failed", alg.Name(), err, len(res.Failed))
		}
	}
}
