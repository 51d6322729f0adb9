package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/monagent/monagent/timebase"
)

// session is the state of one Sync: the counting, retrying network, the RTT
// cache and the result under construction. Exchange may be called
// concurrently (from paralleler rounds); everything else runs on the
// goroutine of Sync.
type session struct {
	ctx   context.Context
	inner Network
	p     Params
	rtt   *rttCache
	now   func() int64
	start int64

	mu     sync.Mutex // guards res.Exchanges, res.Lost, res.GivenUp, res.FitpointsSkipped and failed during parallel rounds
	res    Result
	failed map[int]error // rank -> why, with KeepGoing
}

func newSession(ctx context.Context, name string, net Network, p Params) (*session, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: params: %w", name, err)
	}
	if net.Size() < 1 {
		return nil, fmt.Errorf("%s: network of %d nodes", name, net.Size())
	}
	s := &session{ctx: ctx, inner: net, p: p, rtt: newRTTCache(p.RTTWarmup, p.RTTExchanges), failed: map[int]error{}}
	s.res.Algorithm = name
	s.res.Models = make([]timebase.LinearModel, net.Size())
	if e, ok := net.(elapser); ok {
		s.now = e.Elapsed
	} else {
		t0 := time.Now()
		s.now = func() int64 { return int64(time.Since(t0)) }
	}
	s.start = s.now()
	return s, nil
}

func (s *session) finish() Result {
	s.res.Messages += 2 * s.res.Exchanges
	s.res.DurationNS = s.now() - s.start
	for r := range s.res.Models {
		if err, bad := s.failed[r]; bad {
			s.res.Failed = append(s.res.Failed, RankFailure{Rank: r, Err: err})
			s.res.Models[r] = timebase.LinearModel{}
		}
	}
	return s.res
}

// fail records that rank cannot be synchronised and returns nil, when the
// caller asked to go on (KeepGoing), the sync was not cancelled and err is
// not the simulation's end (errSimHorizon); otherwise it returns err, for
// Sync to end with. A rank's first failure is kept.
func (s *session) fail(rank int, err error) error {
	if !s.p.KeepGoing || s.ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errSimHorizon) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.failed[rank]; !seen {
		s.failed[rank] = err
	}
	return nil
}

// ok reports whether rank has not failed.
func (s *session) ok(rank int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, bad := s.failed[rank]
	return !bad
}

// live returns the positions of idx (indices into pairs) whose pairs can
// still be measured: not those whose client failed, and, when chained (the
// reference answers in its global time: HCA3), not those whose reference
// failed either, whose clients then fail with them.
func (s *session) live(pairs []pair, idx []int, chained bool) []int {
	out := make([]int, 0, len(idx))
	for _, i := range idx {
		pr := pairs[i]
		if chained && !s.ok(pr.ref) {
			_ = s.fail(pr.client, fmt.Errorf("its reference rank %d failed: %w", pr.ref, errUpstream))
		}
		if s.ok(pr.client) {
			out = append(out, i)
		}
	}
	return out
}

// Size implements Network.
func (s *session) Size() int { return s.inner.Size() }

// Exchange implements Network: it counts, and retries lost exchanges.
func (s *session) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	var err error
	for range s.p.Retries + 1 {
		var e Exchange
		e, err = s.inner.Exchange(ctx, from, to)
		lost := err != nil && errors.Is(err, ErrLost)
		s.mu.Lock()
		s.res.Exchanges++
		if lost {
			s.res.Lost++
		}
		s.mu.Unlock()
		if err == nil {
			return e, nil
		}
		if !lost {
			return Exchange{}, err
		}
	}
	s.mu.Lock()
	s.res.GivenUp++
	s.mu.Unlock()
	return Exchange{}, fmt.Errorf("after %d tries: %w", s.p.Retries+1, err)
}

func (s *session) pause(ns int64) error {
	if ns <= 0 {
		return nil
	}
	if p, ok := s.inner.(pauser); ok {
		return p.Pause(s.ctx, ns)
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// pair is a client fitting its clock against a reference.
type pair struct{ client, ref int }

// parallel runs f(i) for i in [0,n) through the network's Parallel if it
// has one, else one after the other. The caller guarantees that the n
// calls involve disjoint nodes.
func (s *session) parallel(n int, f func(ctx context.Context, i int) error) error {
	if par, ok := s.inner.(paralleler); ok && n > 1 {
		return par.Parallel(s.ctx, n, f)
	}
	for i := range n {
		if err := f(s.ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// disjointBatches splits pairs[idx[k]] into runs of consecutive pairs that
// share no node, returning positions k into idx. A tree round is one batch;
// JK's pairs, which all share the root, are one batch each.
func disjointBatches(pairs []pair, idx []int) [][]int {
	var batches [][]int
	var cur []int
	used := map[int]bool{}
	for k, i := range idx {
		pr := pairs[i]
		if used[pr.client] || used[pr.ref] {
			batches = append(batches, cur)
			cur = nil
			clear(used)
		}
		cur = append(cur, k)
		used[pr.client], used[pr.ref] = true, true
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// forPairs calls f(ctx, k) for every position k of idx (indices into
// pairs), running the pairs of each disjoint batch in parallel when the
// network is a paralleler. An error of f fails the pair's client (fail):
// with KeepGoing the other pairs go on.
func (s *session) forPairs(pairs []pair, idx []int, f func(ctx context.Context, k int) error) error {
	for _, b := range disjointBatches(pairs, idx) {
		err := s.parallel(len(b), func(ctx context.Context, j int) error {
			if err := f(ctx, b[j]); err != nil {
				return s.fail(pairs[idx[b[j]]].client, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// measurePairs measures Fitpoints fitpoints for each pair pairs[i], i in
// todo, into points[i] (replacing what was there), and the bias bound of
// its fitpoints into biases[i]. The pairs' fitpoints are interleaved: each
// sweep over them starts SpacingNS after the previous one, so every pair's
// line spans the same stretch of time. Pairs that share no node run their
// part of a sweep in parallel when the network is a paralleler (a tree
// round is one parallel step; JK's pairs all share the root and stay
// serial). The references' readings are kept unmapped (finePoint.RefX).
// A fitpoint whose exchange is lost on every try is left out
// (FitpointsSkipped); a pair that would keep fewer than MinFitpoints fails
// at the loss that leaves it short.
// RTTs are looked up once per pair before the first fitpoint. A pair that
// fails (KeepGoing) is dropped from the later sweeps, as are, when chained,
// those whose reference failed; with no pair left to measure no time
// passes.
func (s *session) measurePairs(pairs []pair, todo []int, points [][]finePoint, biases []int64, chained bool) error {
	rtts := make([]float64, len(pairs))
	todo = s.live(pairs, todo, chained)
	err := s.forPairs(pairs, todo, func(ctx context.Context, k int) error {
		pr := pairs[todo[k]]
		r, err := s.rtt.Get(ctx, s, pr.client, pr.ref)
		if err != nil {
			return err
		}
		rtts[todo[k]] = fineRTT(r)
		biases[todo[k]] = fitpointBias(r)
		return nil
	})
	if err != nil {
		return err
	}
	for _, i := range todo {
		points[i] = points[i][:0]
	}
	// A fitpoint whose exchange is given up is left out, up to
	// Fitpoints − MinFitpoints of a pair's (each call writes its own pair's).
	lost := make([]lossBudget, len(pairs))
	for i := range lost {
		lost[i].allowed = s.p.Fitpoints - MinFitpoints(s.p.Fitpoints)
	}
	for f := range s.p.Fitpoints {
		if todo = s.live(pairs, todo, chained); len(todo) == 0 {
			return nil
		}
		sweep := s.now()
		err := s.forPairs(pairs, todo, func(ctx context.Context, k int) error {
			i := todo[k]
			pr := pairs[i]
			fp, err := measureFitpointFine(ctx, s, pr.client, pr.ref, rtts[i], s.p.Exchanges, s.p.Filter)
			if err != nil {
				if lost[i].skip(err) {
					s.mu.Lock()
					s.res.FitpointsSkipped++
					s.mu.Unlock()
					return nil
				}
				if errors.Is(err, ErrLost) {
					return fmt.Errorf("pair %d->%d: %d of %d fitpoints lost, more than the %d a line may do without (MinFitpoints %d): %w",
						pr.client, pr.ref, lost[i].lost+1, s.p.Fitpoints, lost[i].allowed, MinFitpoints(s.p.Fitpoints), err)
				}
				return err
			}
			points[i] = append(points[i], fp)
			return nil
		})
		if err != nil {
			return err
		}
		if f < s.p.Fitpoints-1 {
			if err := s.pause(s.p.SpacingNS - (s.now() - sweep)); err != nil {
				return err
			}
		}
	}
	return nil
}

// indices returns 0, 1, ..., n−1: every pair of a list, for forPairs, live
// and measurePairs.
func indices(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// publishEach sets the published model of every rank but the root that has
// not failed to model(rank).
func (s *session) publishEach(model func(rank int) fine) {
	for r := 1; r < s.Size(); r++ {
		if s.ok(r) {
			s.res.Models[r] = publish(model(r).model())
		}
	}
}

// fitPairs measures a line for every pair, all pairs in the same sweeps
// (measurePairs), and fits them. global, when not nil, is indexed by rank
// and holds the synchronised ranks' models (the root's is the zero model):
// the references then answer in global time, their readings mapped through
// their models without rounding when the line is fitted (HCA3), and each
// client's model, its parent's error inherited, is stored in it. The pairs
// must then come parents first. A fit rejected for an absurd slope or for
// scattered fitpoints (a clock step) is counted and its pair re-measured,
// up to Retries times. A pair that fails (KeepGoing) fails its client; its
// model is left zero.
func (s *session) fitPairs(pairs []pair, global []fine) ([]fine, error) {
	models := make([]fine, len(pairs))
	points := make([][]finePoint, len(pairs))
	biases := make([]int64, len(pairs))
	done := make([]bool, len(pairs))
	var ready []bool
	if global != nil {
		ready = make([]bool, len(global))
		ready[0] = true
	}
	todo := indices(len(pairs))
	for attempt := 0; ; attempt++ {
		if err := s.measurePairs(pairs, todo, points, biases, global != nil); err != nil {
			return nil, err
		}
		var again []int
		waiting := 0
		for i, pr := range pairs {
			if global != nil && !done[i] && !s.ok(pr.ref) {
				_ = s.fail(pr.client, fmt.Errorf("its reference rank %d failed: %w", pr.ref, errUpstream))
			}
			if done[i] || !s.ok(pr.client) {
				done[i] = true
				continue
			}
			pts := points[i]
			if global != nil {
				if !ready[pr.ref] {
					waiting++ // its parent's fit was rejected: fitted next time
					continue
				}
				pts = mapPoints(pts, global[pr.ref])
			}
			m, err := fitFine(pts, s.p.Fit)
			if lim := scatterLimit(biases[i]); err == nil && m.ResidualNS > lim {
				err = fmt.Errorf("fit over %d fitpoints: they scatter %.0f ns about the line, more than %.0f: %w", len(pts), m.ResidualNS, lim, ErrScattered)
			}
			rejected := errors.Is(err, ErrAbsurdSlope) || errors.Is(err, ErrScattered)
			switch {
			case rejected && attempt < s.p.Retries:
				s.res.Rejected++
				again = append(again, i)
			case rejected:
				s.res.Rejected++
				if err := s.fail(pr.client, fmt.Errorf("pair %d->%d: %d fits rejected: %w", pr.client, pr.ref, attempt+1, err)); err != nil {
					return nil, err
				}
				done[i] = true
			case err != nil:
				if err := s.fail(pr.client, fmt.Errorf("pair %d->%d: %w", pr.client, pr.ref, err)); err != nil {
					return nil, err
				}
				done[i] = true
			default:
				m.FloorNS += biases[i]
				models[i], done[i] = m, true
				if global != nil {
					global[pr.client] = inherit(m, global[pr.ref])
					ready[pr.client] = true
				}
			}
		}
		switch {
		case len(again) > 0:
			todo = again
		case waiting > 0:
			return nil, fmt.Errorf("%d pairs wait for references that are never fitted: pairs out of order", waiting)
		default:
			return models, nil
		}
	}
}

// coverageSigmas is how many standard errors of the fits the published
// models' Uncertainty spans: the drift-modelling algorithms scale their
// models' ResidualNS and SlopeErr by it, so that Uncertainty, the floor
// plus one such error, is a bound that covers about 99 % of true errors
// rather than one sigma.
const coverageSigmas = 3

// publish scales m's statistical error to coverageSigmas.
func publish(m timebase.LinearModel) timebase.LinearModel {
	m.ResidualNS *= coverageSigmas
	m.SlopeErr *= coverageSigmas
	return m
}

// fitpointBias bounds the bias of a pair's fitpoints (ns), which every
// fitpoint shares and the fit cannot see: a fitpoint subtracts half the
// pair's mean RTT from one sample, whose true one-way delays differ from
// that half by up to about half the spread between the mean and the best
// RTT (for exponential jitter of mean J the bias is (ln 2 − 1)·J, and the
// spread is ≈ 2J). Link asymmetry is invisible and not included.
func fitpointBias(r rttSummary) int64 {
	return int64(math.Ceil(max(fineRTT(r)-float64(r.Min), 0) / 2))
}

// inherit gives child, fitted against its parent's global time (HCA3),
// the parent's error as well: the parent's Uncertainty at the child's mean
// fit time becomes part of the child's floor, and the slope errors add in
// quadrature. The root (a zero model) adds nothing.
func inherit(child, parent fine) fine {
	if parent.N == 0 && parent.FloorNS == 0 {
		return child
	}
	child.FloorNS += parent.Uncertainty(child.MeanX - child.Intercept)
	child.SlopeErr = math.Hypot(child.SlopeErr, parent.SlopeErr)
	return child
}

// offset measures client's offset from ref with SKaMPI's method, using and
// updating the pair's best RTT for the early stop and carrying the
// intervals along slope. It also returns the offset at est.At unrounded. It
// may run concurrently for disjoint pairs.
func (s *session) offset(ctx context.Context, client, ref int, slope float64) (offsetEstimate, float64, error) {
	est, exact, err := skampiFine(ctx, s, client, ref, skampiConfig{
		Min:     s.p.MinPingPongs,
		Max:     s.p.MaxPingPongs,
		BestRTT: s.rtt.Best(client, ref),
		Slope:   slope,
	})
	if err != nil {
		return offsetEstimate{}, 0, err
	}
	s.rtt.Observe(client, ref, est.MinRTT)
	return est, exact, nil
}
