package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/monagent/monagent/timebase"
)

// Bound is the error bound published with a model's offset at local time x:
// its Uncertainty, which the algorithms scale to cover about 99 % of true
// errors (coverageSigmas), growing with the distance from the fit.
func Bound(m timebase.LinearModel, x int64) int64 { return m.Uncertainty(x) }

// Clocks is the ground truth of an experiment: node i reads
// C_i(t) = t + round(Drift[i]·t) + Offset[i] at base time t, as simNetwork's
// clocks and the test-only virtual clocks of agents over one host's
// CLOCK_MONOTONIC_RAW do.
type Clocks struct {
	Drift  []float64
	Offset []int64
}

// RandomClocks draws p clocks as simNetwork does: drifts uniform in ±driftPPM,
// offsets uniform in ±offsetNS, from seed.
func RandomClocks(p int, seed uint64, driftPPM float64, offsetNS int64) (Clocks, error) {
	s, err := newSimNetwork(SimConfig{Nodes: p, Seed: seed, DriftPPM: driftPPM, OffsetNS: offsetNS})
	if err != nil {
		return Clocks{}, err
	}
	c := Clocks{Drift: make([]float64, p), Offset: make([]int64, p)}
	for i := range p {
		c.Drift[i], c.Offset[i] = s.Drift(i), s.ClockOffset(i)
	}
	return c, nil
}

// At is node i's clock at base time t.
func (c Clocks) At(i int, t int64) int64 {
	return t + int64(math.Round(c.Drift[i]*float64(t))) + c.Offset[i]
}

// Check is the accuracy of a synchronisation's models at one time: over the
// Ranks synchronised non-root nodes, the largest and the median |model
// offset − true offset|, and the share whose published Bound covers its
// true error. With no rank to check every figure is zero.
type Check struct {
	AfterNS          int64   `json:"after_ns"` // after the sync ended
	Ranks            int     `json:"ranks"`
	MaxAbsErrorNS    int64   `json:"max_abs_error_ns"`
	MedianAbsErrorNS int64   `json:"median_abs_error_ns"`
	MaxBoundNS       int64   `json:"max_bound_ns"`
	BoundCoverage    float64 `json:"bound_coverage"`
}

// Evaluate checks res's models against the clocks at base times end+after
// for each after: node i's model, applied at node i's clock then, against
// the true offset C_i − C_0 then. The ranks in res.Failed have no model and
// are not checked; with none left (or one node) every Check is zero.
func (c Clocks) Evaluate(res Result, end int64, after []int64) []Check {
	failed := make(map[int]bool, len(res.Failed))
	for _, f := range res.Failed {
		failed[f.Rank] = true
	}
	checks := make([]Check, 0, len(after))
	for _, a := range after {
		t := end + a
		ck := Check{AfterNS: a}
		errs := make([]int64, 0, len(res.Models))
		covered := 0
		root := c.At(0, t)
		for i := 1; i < len(res.Models); i++ {
			if failed[i] {
				continue
			}
			x := c.At(i, t)
			m := res.Models[i]
			e := m.Offset(x) - (x - root)
			if e < 0 {
				e = -e
			}
			errs = append(errs, e)
			b := Bound(m, x)
			ck.MaxBoundNS = max(ck.MaxBoundNS, b)
			if e <= b {
				covered++
			}
		}
		if ck.Ranks = len(errs); ck.Ranks > 0 {
			slices.Sort(errs)
			ck.MaxAbsErrorNS = errs[len(errs)-1]
			ck.MedianAbsErrorNS = errs[len(errs)/2]
			if len(errs)%2 == 0 {
				ck.MedianAbsErrorNS = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
			}
			ck.BoundCoverage = float64(covered) / float64(len(errs))
		}
		checks = append(checks, ck)
	}
	return checks
}

// Report is what one experiment measured; its JSON form is what
// `monagent hca sim --json` prints. Lost counts every lost try of an
// exchange; GivenUp those exchanges lost on every try, each of which left
// out its ping-pong or fitpoint (FitpointsSkipped), failing its pair only
// when too little was left (MinFitpoints). Failed are the ranks not
// synchronised, and Checks are over the others.
type Report struct {
	Algorithm      string       `json:"algorithm"`
	Nodes          int          `json:"nodes"`
	Transport      string       `json:"transport"`
	Seed           uint64       `json:"seed"`
	DriftPPM       float64      `json:"drift_ppm"`
	Loss           float64      `json:"loss"` // the simulated network's; 0 over udp
	SyncDurationNS int64        `json:"sync_duration_ns"`
	Messages       int64        `json:"messages"`
	Exchanges      int64        `json:"exchanges"`
	Lost           int64        `json:"lost"`
	GivenUp        int64        `json:"given_up"`
	Rejected       int          `json:"rejected"`
	Failed         []FailedRank `json:"failed"`
	Checks         []Check      `json:"checks"`
	// FitpointsSkipped are the fitpoints left out of their lines.
	FitpointsSkipped int64 `json:"fitpoints_skipped"`
	// Unreached are the ranks (also in Failed) that answered none of the
	// pre-round check's pings, and Undelivered those that did not
	// acknowledge their model, which an agent keeps its last model
	// instead of: sim only (over udp the experiment runs the algorithm
	// alone).
	Unreached   []int `json:"unreached"`
	Undelivered []int `json:"undelivered"`
}

// FailedRank is a rank a synchronisation could not model, and why.
type FailedRank struct {
	Rank  int    `json:"rank"`
	Error string `json:"error"`
}

// SimExperiment is one algorithm run on a simulated network. Ranks that
// cannot be synchronised (a lossy network) are reported in Report.Failed:
// Run sets Params.KeepGoing.
type SimExperiment struct {
	Algorithm string
	Network   SimConfig // Nodes, Seed, DriftPPM and OffsetNS draw the clocks
	Params    Params
	// CheckAfter are the times after the sync's end (ns) at which the
	// models are checked.
	CheckAfter []int64
}

// Run runs the experiment as an agent's round: rank 0's pre-round check
// of every rank (reachTries pings each), the algorithm, and the models'
// delivery (giveTries each), all over the simulated network. A rank the
// check did not reach is listed in Unreached and in Failed (an agent's
// round would have failed); the algorithm runs anyway, with KeepGoing.
func (x SimExperiment) Run(ctx context.Context) (Report, error) {
	alg, err := AlgorithmByName(x.Algorithm)
	if err != nil {
		return Report{}, err
	}
	if i := slices.IndexFunc(x.CheckAfter, func(a int64) bool { return a < 0 }); i >= 0 {
		return Report{}, fmt.Errorf("hca sim: check time %d ns is negative", x.CheckAfter[i])
	}
	sim, err := newSimNetwork(x.Network)
	if err != nil {
		return Report{}, err
	}
	p := x.Params
	p.KeepGoing = true
	d := simDriver(sim, sim, alg, p)
	var unreached []FailedRank
	if err := d.reach(ctx); err != nil {
		var na *NoAnswerError
		if !errors.As(err, &na) {
			return Report{}, fmt.Errorf("hca sim: %s on %d nodes: %w", x.Algorithm, x.Network.Nodes, err)
		}
		for _, r := range append([]int{na.Rank}, na.Others...) {
			unreached = append(unreached, FailedRank{Rank: r, Error: fmt.Sprintf("pre-round check: no answer to %d pings (an agent's round fails)", reachTries)})
		}
	}
	res, err := alg.Sync(ctx, sim, p)
	if err != nil {
		return Report{}, fmt.Errorf("hca sim: %s on %d nodes: %w", x.Algorithm, x.Network.Nodes, err)
	}
	clocks := Clocks{Drift: make([]float64, sim.Size()), Offset: make([]int64, sim.Size())}
	for i := range sim.Size() {
		clocks.Drift[i], clocks.Offset[i] = sim.Drift(i), sim.ClockOffset(i)
	}
	end := x.Network.StartNS + sim.Elapsed()
	undelivered, _ := d.give(ctx, Round{Number: 1, Result: res})
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("hca sim: %w", err)
	}
	// An unreached rank's first failure is the pre-round check's.
	for _, u := range unreached {
		res.Failed = slices.DeleteFunc(res.Failed, func(f RankFailure) bool { return f.Rank == u.Rank })
		res.Failed = append(res.Failed, RankFailure{Rank: u.Rank, Err: errors.New(u.Error)})
	}
	slices.SortFunc(res.Failed, func(a, b RankFailure) int { return a.Rank - b.Rank })
	rep := NewReport(res, "sim", x.Network.Seed, x.Network.DriftPPM)
	rep.Loss = x.Network.Loss
	rep.Unreached = make([]int, 0, len(unreached))
	for _, u := range unreached {
		rep.Unreached = append(rep.Unreached, u.Rank)
	}
	rep.Undelivered = append(make([]int, 0, len(undelivered)), undelivered...)
	rep.Checks = clocks.Evaluate(res, end, x.CheckAfter)
	return rep, nil
}

// NewReport fills a Report's fields from a Result (all but Loss and Checks).
func NewReport(res Result, transport string, seed uint64, driftPPM float64) Report {
	failed := make([]FailedRank, 0, len(res.Failed))
	for _, f := range res.Failed {
		failed = append(failed, FailedRank{Rank: f.Rank, Error: f.Err.Error()})
	}
	return Report{
		Algorithm: res.Algorithm, Nodes: len(res.Models), Transport: transport, Seed: seed, DriftPPM: driftPPM,
		SyncDurationNS: res.DurationNS, Messages: res.Messages, Exchanges: res.Exchanges, Lost: res.Lost,
		GivenUp: res.GivenUp, FitpointsSkipped: res.FitpointsSkipped, Rejected: res.Rejected, Failed: failed,
	}
}
