package hca

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/monagent/monagent/timebase"
)

// Algorithms returns the implemented algorithms in the order of the notes.
func Algorithms() []Algorithm {
	return []Algorithm{skampiOffsetOnly{}, treeOffsetOnly{}, jonesKoenig{}, hca{}, hca2{}, hca3{}}
}

// run runs body in a new session of algorithm a on net and returns the
// session's result, or body's error.
func run(ctx context.Context, a Algorithm, net Network, p Params, body func(s *session) error) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	if err := body(s); err != nil {
		return Result{}, err
	}
	return s.finish(), nil
}

// AlgorithmNames are the names of Algorithms, in their order.
func AlgorithmNames() []string {
	var names []string
	for _, a := range Algorithms() {
		names = append(names, a.Name())
	}
	return names
}

// AlgorithmByName returns the algorithm called name.
func AlgorithmByName(name string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if a.Name() == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("hca: unknown algorithm %q", name)
}

// skampiOffsetOnly measures each rank's offset from the root, one rank at a
// time, with SKaMPI's interval method, and models no drift: the baseline
// that shows why drift matters. Its models' Uncertainty assumes the worst
// slope allowed (maxSlope), so it grows by 0.5 µs per millisecond.
type skampiOffsetOnly struct{}

// Name implements Algorithm.
func (skampiOffsetOnly) Name() string { return "skampi" }

// Sync implements Algorithm.
func (a skampiOffsetOnly) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	return run(ctx, a, net, p, func(s *session) error {
		for r := 1; r < net.Size(); r++ {
			est, _, err := s.offset(s.ctx, r, 0, 0)
			if err != nil {
				if err := s.fail(r, fmt.Errorf("skampi: rank %d: %w", r, err)); err != nil {
					return err
				}
				continue
			}
			s.res.Models[r] = offsetOnly(est.Model(0, timebase.LinearModel{}), est.At)
		}
		return nil
	})
}

// offsetOnly is m, an offset measured at local time at, as a model that knows
// no drift: one point, whose slope may be anything up to maxSlope.
func offsetOnly(m timebase.LinearModel, at int64) timebase.LinearModel {
	m.N, m.MeanX, m.SlopeErr = 1, at, maxSlope
	return m
}

// JK is Jones & Koenig's method: the root goes round-robin over all ranks for
// each fitpoint, and every rank fits its own line against the root. O(p·F·E)
// exchanges, all through the root.
type jonesKoenig struct{}

// Name implements Algorithm.
func (jonesKoenig) Name() string { return "jk" }

// Sync implements Algorithm.
func (a jonesKoenig) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	return run(ctx, a, net, p, func(s *session) error {
		pairs := make([]pair, 0, net.Size())
		for r := 1; r < net.Size(); r++ {
			pairs = append(pairs, pair{client: r, ref: 0})
		}
		models, err := s.fitPairs(pairs, nil)
		if err != nil {
			return fmt.Errorf("jk: %w", err)
		}
		s.publishEach(func(r int) fine { return models[r-1] })
		return nil
	})
}

// treeRounds returns k = floor(log2 p) and, for round i of the HCA tree
// (0 ≤ i < k), the pairs child r+2^i → parent r for every r < 2^k with
// r mod 2^(i+1) == 0; extra holds the pairs r → r−2^k for the ranks r ≥ 2^k.
func treeRounds(p int) (rounds [][]pair, extra []pair) {
	k := bits.Len(uint(p)) - 1
	top := 1 << k
	for i := range k {
		var round []pair
		step := 1 << (i + 1)
		for r := 0; r < top; r += step {
			round = append(round, pair{client: r + 1<<i, ref: r})
		}
		rounds = append(rounds, round)
	}
	for r := top; r < p; r++ {
		extra = append(extra, pair{client: r, ref: r - top})
	}
	return rounds, extra
}

// HCA is the hierarchical algorithm: slopes learned pairwise up a binary tree
// in floor(log2 p) rounds (ranks beyond the largest power of two first learn
// against r − 2^k in one extra round), each parent merging its child's
// subtree models into its own (timebase.Merge); then the root, holding every
// rank's slope relative to itself, re-measures every intercept with SKaMPI's
// method, one rank at a time: O(log p) rounds of fits plus O(p) short
// offset measurements.
//
// The tree's rounds are interleaved in time (the schedule of all three HCA
// variants): every sweep takes one fitpoint of every edge, a round at a
// time, each round's pairs in parallel; so every level's line spans the
// same F fitpoints' time and none is extrapolated over the time the other
// levels took, and with a spacing between fitpoints the lines take F ×
// spacing in all rather than log p times that.
type hca struct{}

// Name implements Algorithm.
func (hca) Name() string { return "hca" }

// held is a model of rank relative to whoever holds it. treeOffsetOnly also
// tracks, in rank's clock, when the chain's newest edge was measured
// (last), how many edges it has (edges) and the sum over them of the time
// from their measurement to last (lag), for its drift bound.
type held struct {
	rank  int
	model fine

	edges int
	last  int64
	lag   float64
}

// mergeHeld is the usual join of a tree: sub, a model relative to the
// child, merged with edge, the child relative to its parent.
func mergeHeld(edge, sub held) held {
	return held{rank: sub.rank, model: mergeFine(edge.model, sub.model)}
}

// climb runs the tree bottom up (the extra round, then rounds 0..k−1).
// measure returns, for a round's pairs, each child's model relative to its
// parent; the child then ships its subtree's models up (one message) and
// the parent joins them with the edge's model. A child whose edge failed
// (KeepGoing) ships nothing, and every rank of its subtree fails with it.
// climb returns what the root holds, indexed by rank (index 0 unused, and
// the failed ranks').
func (s *session) climb(name string, measure func(pairs []pair) ([]held, error), join func(edge, sub held) held) ([]held, error) {
	size := s.Size()
	rounds, extra := treeRounds(size)
	// holds[r] are the models of r's subtree relative to r.
	holds := make([][]held, size)
	learn := func(pairs []pair) error {
		if len(pairs) == 0 {
			return nil
		}
		edges, err := measure(pairs)
		if err != nil {
			return err
		}
		for i, pr := range pairs {
			if !s.ok(pr.client) {
				for _, h := range holds[pr.client] {
					_ = s.fail(h.rank, fmt.Errorf("via rank %d: %w", pr.client, errUpstream))
				}
				holds[pr.client] = nil
				continue
			}
			e := edges[i]
			e.rank = pr.client
			holds[pr.ref] = append(holds[pr.ref], e)
			for _, h := range holds[pr.client] {
				holds[pr.ref] = append(holds[pr.ref], join(e, h))
			}
			s.res.Messages++ // the child ships its subtree's models up
			holds[pr.client] = nil
		}
		return nil
	}
	if err := learn(extra); err != nil {
		return nil, fmt.Errorf("%s: extra round: %w", name, err)
	}
	for i, round := range rounds {
		if err := learn(round); err != nil {
			return nil, fmt.Errorf("%s: round %d: %w", name, i, err)
		}
	}
	if failed := len(s.failed); len(holds[0])+failed != size-1 {
		return nil, fmt.Errorf("%s: root holds %d models and %d ranks failed of %d", name, len(holds[0]), failed, size-1)
	}
	out := make([]held, size)
	for _, h := range holds[0] {
		out[h.rank] = h
	}
	// The root scatters the models, one message per rank it holds.
	s.res.Messages += int64(len(holds[0]))
	return out, nil
}

// treePairs is every pair of the tree in climb's order: the extra round,
// then rounds 0..k−1.
func treePairs(p int) []pair {
	rounds, extra := treeRounds(p)
	out := slices.Clone(extra)
	for _, r := range rounds {
		out = append(out, r...)
	}
	return out
}

// fittedTree fits every edge of the tree in the same sweeps (fitPairs), so
// that no level's line is extrapolated over the time the other levels
// took. It returns the pairs in climb's order and their models.
func (s *session) fittedTree() ([]pair, []fine, error) {
	all := treePairs(s.Size())
	models, err := s.fitPairs(all, nil)
	return all, models, err
}

// measured is climb's measure over edges already measured: models[i] is the
// edge of pairs[i], and each child rank is the client of exactly one pair.
func measured(pairs []pair, models []fine) func([]pair) ([]held, error) {
	edge := make(map[int]fine, len(pairs))
	for i, pr := range pairs {
		edge[pr.client] = models[i]
	}
	return func(round []pair) ([]held, error) {
		out := make([]held, len(round))
		for i, pr := range round {
			out[i].model = edge[pr.client]
		}
		return out, nil
	}
}

// Sync implements Algorithm.
func (a hca) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	return run(ctx, a, net, p, func(s *session) error {
		all, fits, err := s.fittedTree()
		if err != nil {
			return fmt.Errorf("hca: tree: %w", err)
		}
		slopes, err := s.climb(a.Name(), measured(all, fits), mergeHeld)
		if err != nil {
			return err
		}
		// The root re-measures every intercept against itself.
		for r := 1; r < net.Size(); r++ {
			if !s.ok(r) {
				continue
			}
			m := slopes[r].model
			est, exact, err := s.offset(s.ctx, r, 0, m.Slope)
			if err != nil {
				if err := s.fail(r, fmt.Errorf("hca: intercept of rank %d: %w", r, err)); err != nil {
					return err
				}
				continue
			}
			s.res.Models[r] = publish(offsetFine(est, exact, m.Slope, m.LinearModel).model())
		}
		return nil
	})
}

// HCA2 is HCA with hierarchical intercepts: the same tree, but once the
// lines are fitted every child re-measures its intercept against its
// parent with SKaMPI's method (carried along the pair's slope), a tree
// round at a time, and the models, intercepts included, are merged up the
// tree. Every step is a tree round: O(log p) rounds and no O(p) phase at
// the root, at the price of intercept errors that add up along the depth.
type hca2 struct{}

// Name implements Algorithm.
func (hca2) Name() string { return "hca2" }

// Sync implements Algorithm.
func (a hca2) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	return run(ctx, a, net, p, func(s *session) error {
		all, fits, err := s.fittedTree()
		if err != nil {
			return fmt.Errorf("hca2: tree: %w", err)
		}
		// Then every child re-measures its intercept against its parent,
		// carried along the pair's slope, a tree round at a time (each call
		// writes only its own pair's model).
		idx := s.live(all, indices(len(all)), false)
		err = s.forPairs(all, idx, func(ctx context.Context, k int) error {
			i := idx[k]
			m := fits[i]
			est, exact, err := s.offset(ctx, all[i].client, all[i].ref, m.Slope)
			if err != nil {
				return fmt.Errorf("intercept %d->%d: %w", all[i].client, all[i].ref, err)
			}
			fits[i] = offsetFine(est, exact, m.Slope, m.LinearModel)
			return nil
		})
		if err != nil {
			return fmt.Errorf("hca2: %w", err)
		}
		models, err := s.climb(a.Name(), measured(all, fits), mergeHeld)
		if err != nil {
			return err
		}
		s.publishEach(func(r int) fine { return models[r].model })
		return nil
	})
}

// treeOffsetOnly is Netgauge's offset-only tree: each pair of the HCA tree
// measures the child's offset from its parent with the min-RTT sample of
// MaxPingPongs ping-pongs (minRTTOffset), and the offsets are summed up the
// tree. No drift is modelled. Its models' Uncertainty is the sum of the
// per-level half-RTTs plus, as for skampiOffsetOnly, the worst slope
// (maxSlope) over the time since the newest level was measured and over the
// lag between the levels' measurements.
type treeOffsetOnly struct{}

// Name implements Algorithm.
func (treeOffsetOnly) Name() string { return "tree" }

// Sync implements Algorithm.
func (a treeOffsetOnly) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	return run(ctx, a, net, p, func(s *session) error {
		measure := func(pairs []pair) ([]held, error) {
			out := make([]held, len(pairs))
			err := s.forPairs(pairs, indices(len(pairs)), func(ctx context.Context, i int) error {
				pr := pairs[i]
				est, err := minRTTOffset(ctx, s, pr.client, pr.ref, s.p.MaxPingPongs)
				if err != nil {
					return err
				}
				s.rtt.Observe(pr.client, pr.ref, est.MinRTT)
				out[i] = held{model: fine{LinearModel: est.Model(0, timebase.LinearModel{})}, edges: 1, last: est.At}
				return nil
			})
			return out, err
		}
		join := func(edge, sub held) held {
			// The edge was measured at edge.last in the child's clock; in
			// sub.rank's clock that is the child's time plus the offset of
			// sub.rank from the child. Every earlier edge's lag grows by the
			// time since sub's newest one.
			last := sub.model.Invert().Apply(edge.last)
			return held{
				rank:  sub.rank,
				model: mergeFine(edge.model, sub.model),
				edges: sub.edges + 1,
				last:  last,
				lag:   sub.lag + float64(sub.edges)*float64(last-sub.last),
			}
		}
		models, err := s.climb(a.Name(), measure, join)
		if err != nil {
			return err
		}
		for r := 1; r < net.Size(); r++ {
			if !s.ok(r) {
				continue
			}
			h := models[r]
			m := offsetOnly(h.model.model(), h.last)
			m.ResidualNS = 0
			m.FloorNS += int64(math.Ceil(maxSlope * math.Abs(h.lag)))
			s.res.Models[r] = m
		}
		return nil
	})
}

// HCA3 is the top-down variant: the tree is walked from the root down, and a
// parent that is already synchronised answers with its global time (its
// clock mapped through its model, unrounded), so each child fits its line
// directly against the root's timeline and nothing is merged. The
// regression's own intercept is kept. Errors accumulate down the tree's
// depth, and so does the Uncertainty: each child inherits its parent's.
// The exchanges of all levels share the same sweeps (as HCA's do); the
// parent's readings are mapped to global time when the child's line is
// fitted, parents first, which is the same arithmetic as mapping them on
// the spot once the parent's model is known.
type hca3 struct{}

// Name implements Algorithm.
func (hca3) Name() string { return "hca3" }

// Sync implements Algorithm.
func (a hca3) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	return run(ctx, a, net, p, func(s *session) error {
		rounds, extra := treeRounds(net.Size())
		// The pairs parents first: rounds k−1..0, then the extra round.
		var pairs []pair
		for i := len(rounds) - 1; i >= 0; i-- {
			pairs = append(pairs, rounds[i]...)
		}
		pairs = append(pairs, extra...)
		// global[r] is rank r's model once it is synchronised (the root's is
		// the identity): its answers are its clock mapped through it.
		global := make([]fine, net.Size())
		if _, err := s.fitPairs(pairs, global); err != nil {
			return fmt.Errorf("hca3: %w", err)
		}
		s.publishEach(func(r int) fine { return global[r] })
		return nil
	})
}
