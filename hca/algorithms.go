package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/monagent/monagent/timebase"
)

// Algorithm is one clock synchronisation method. Sync runs it on net and
// returns every rank's model relative to the root.
type Algorithm interface {
	Name() string
	Sync(ctx context.Context, net Network, p Params) (Result, error)
}

// Pauser is implemented by networks whose time can be let pass without
// sleeping (Sim). On other networks the algorithms wait on a timer.
type Pauser interface {
	Pause(ctx context.Context, ns int64) error
}

// Elapser is implemented by networks with their own notion of elapsed time
// (Sim); Result.DurationNS is measured with it, otherwise with the wall
// clock.
type Elapser interface {
	Elapsed() int64
}

// Paralleler is implemented by networks on which exchanges between disjoint
// pairs of nodes can run at the same time. Parallel calls f(i) for i in
// [0,n), possibly concurrently, and returns the first error.
type Paralleler interface {
	Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error
}

// Params are the knobs every algorithm shares; each uses the ones it needs.
type Params struct {
	RTTWarmup    int   // ping-pongs thrown away before an RTT measurement
	RTTExchanges int   // ping-pongs of an RTT measurement
	Fitpoints    int   // F: fitpoints per fitted line
	Exchanges    int   // E: ping-pongs per fitpoint
	SpacingNS    int64 // least time between the starts of a pair's successive fitpoints
	MinPingPongs int   // SKaMPI offset measurement: at least
	MaxPingPongs int   // and at most this many ping-pongs
	Fit          FitMethod
	// Filter chooses each fitpoint's sample among its exchanges.
	Filter FitpointFilter
	// Retries is how often a lost exchange is retried, and how often a pair
	// is re-measured after its fit was rejected for an absurd slope or for
	// scattered fitpoints (ErrScattered).
	Retries int
	// KeepGoing: a rank that cannot be synchronised (an exchange lost on
	// every try, its fits rejected on every try, or a rank on its path to
	// the root among those) is listed in Result.Failed and the others go
	// on. Without it the first such failure ends Sync with its error.
	KeepGoing bool
}

// DefaultParams returns parameters for a LAN: 30 fitpoints of 30 exchanges
// 200 ms apart, so that each line spans 5.8 s, each fitpoint the exchange
// with the shortest round trip, and up to 100 ping-pongs per SKaMPI offset
// (HCA's and HCA2's intercepts). Between 16 agents over loopback UDP they
// give ≤ 2 µs at the sync's end and ≤ 5 µs 20 s later in about 6.4 s; 20
// fitpoints 100 ms apart and 30 ping-pongs took 2.3 s but erred up to 8 µs
// 20 s later: a line's slope error, which the time since the fit
// multiplies, shrinks with the time the line spans.
func DefaultParams() Params {
	return Params{
		RTTWarmup:    5,
		RTTExchanges: 20,
		Fitpoints:    30,
		Exchanges:    30,
		SpacingNS:    200_000_000,
		MinPingPongs: 5,
		MaxPingPongs: 100,
		Fit:          LeastSquares,
		Filter:       MinRTTSample,
		Retries:      3,
	}
}

// Validate reports the first unusable parameter.
func (p Params) Validate() error {
	switch {
	case p.RTTWarmup < 0:
		return fmt.Errorf("rtt_warmup %d: must not be negative", p.RTTWarmup)
	case p.RTTExchanges < 1:
		return fmt.Errorf("rtt_exchanges %d: need at least 1", p.RTTExchanges)
	case p.Fitpoints < 2:
		return fmt.Errorf("fitpoints %d: a line needs at least 2", p.Fitpoints)
	case p.Exchanges < 1:
		return fmt.Errorf("exchanges %d: need at least 1", p.Exchanges)
	case p.SpacingNS < 0:
		return fmt.Errorf("spacing %d ns: must not be negative", p.SpacingNS)
	case p.MinPingPongs < 1 || p.MaxPingPongs < p.MinPingPongs:
		return fmt.Errorf("ping-pongs min %d max %d: want 1 <= min <= max", p.MinPingPongs, p.MaxPingPongs)
	case p.Fit != LeastSquares && p.Fit != TheilSen:
		return fmt.Errorf("fit %d: unknown method", int(p.Fit))
	case p.Filter != MedianSample && p.Filter != MinRTTSample:
		return fmt.Errorf("fitpoint filter %d: unknown", int(p.Filter))
	case p.Retries < 0:
		return fmt.Errorf("retries %d: must not be negative", p.Retries)
	}
	return nil
}

// Result is what a synchronisation produced.
type Result struct {
	Algorithm string
	// Models[r] is rank r's clock relative to the root's; Models[0] is the
	// identity. Uncertainty(x) of each grows with the distance from the
	// measurements, and is meant to cover about 99 % of true errors: the
	// drift-modelling algorithms publish their fits' ResidualNS and
	// SlopeErr scaled to CoverageSigmas. For HCA, HCA2 and SKaMPI the floor
	// is the SKaMPI intervals' half-width (summed over the levels for
	// HCA2), a hard bound whatever the links' asymmetry; for JK and HCA3 it
	// is a bound on the fitpoints' shared bias from the pair's RTT spread
	// (fitpointBias), plus for HCA3 the parents' Uncertainty at the time
	// the child was fitted. For the offset-only tree it is the summed
	// half-RTTs and the worst slope over the lag between the levels. Link
	// asymmetry is invisible to JK and HCA3's bound.
	Models    []timebase.LinearModel
	Exchanges int64 // ping-pongs attempted, retries of lost ones included
	Lost      int64 // of which lost
	// Messages counts two per exchange attempted (a lost one is counted in
	// full) plus the model transfers of tree algorithms (one per tree edge
	// up, one per rank for the root's scatter).
	Messages   int64
	DurationNS int64 // on the network's clock (Sim: simulated time)
	Rejected   int   // fits rejected for an absurd slope or scattered fitpoints (ErrScattered), then re-measured
	// GivenUp counts the exchanges lost on every one of their Retries+1
	// tries (each try is counted in Lost); each failed its pair.
	GivenUp int64
	// Failed are the ranks that were not synchronised, in rank order, with
	// why: only with Params.KeepGoing. Their Models are zero and mean
	// nothing.
	Failed []RankFailure
}

// RankFailure is a rank a synchronisation could not model, and why.
type RankFailure struct {
	Rank int
	Err  error
}

// ErrUpstream is why a rank fails (wrapped, with the rank) when a rank on
// its path to the root failed: its model would have been merged through,
// or fitted against, that rank's.
var ErrUpstream = errors.New("hca: a rank on its path to the root was not synchronised")

// Algorithms returns the implemented algorithms in the order of the notes.
func Algorithms() []Algorithm {
	return []Algorithm{SKaMPIOffsetOnly{}, TreeOffsetOnly{}, JK{}, HCA{}, HCA2{}, HCA3{}}
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

// session is the state of one Sync: the counting, retrying network, the RTT
// cache and the result under construction. Exchange may be called
// concurrently (from Paralleler rounds); everything else runs on the
// goroutine of Sync.
type session struct {
	ctx   context.Context
	inner Network
	p     Params
	rtt   *RTTCache
	now   func() int64
	start int64

	mu     sync.Mutex // guards res.Exchanges, res.Lost, res.GivenUp and failed during parallel rounds
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
	s := &session{ctx: ctx, inner: net, p: p, rtt: NewRTTCache(p.RTTWarmup, p.RTTExchanges), failed: map[int]error{}}
	s.res.Algorithm = name
	s.res.Models = make([]timebase.LinearModel, net.Size())
	if e, ok := net.(Elapser); ok {
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
// not the simulation's end (ErrSimHorizon); otherwise it returns err, for
// Sync to end with. A rank's first failure is kept.
func (s *session) fail(rank int, err error) error {
	if !s.p.KeepGoing || s.ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrSimHorizon) {
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
			_ = s.fail(pr.client, fmt.Errorf("its reference rank %d failed: %w", pr.ref, ErrUpstream))
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
	if p, ok := s.inner.(Pauser); ok {
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
	if par, ok := s.inner.(Paralleler); ok && n > 1 {
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
// network is a Paralleler. An error of f fails the pair's client (fail):
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
// part of a sweep in parallel when the network is a Paralleler (a tree
// round is one parallel step; JK's pairs all share the root and stay
// serial). The references' readings are kept unmapped (finePoint.RefX).
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
	todo := make([]int, len(pairs))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; ; attempt++ {
		if err := s.measurePairs(pairs, todo, points, biases, global != nil); err != nil {
			return nil, err
		}
		var again []int
		waiting := 0
		for i, pr := range pairs {
			if global != nil && !done[i] && !s.ok(pr.ref) {
				_ = s.fail(pr.client, fmt.Errorf("its reference rank %d failed: %w", pr.ref, ErrUpstream))
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

// CoverageSigmas is how many standard errors of the fits the published
// models' Uncertainty spans: the drift-modelling algorithms scale their
// models' ResidualNS and SlopeErr by it, so that Uncertainty, the floor
// plus one such error, is a bound that covers about 99 % of true errors
// rather than one sigma.
const CoverageSigmas = 3

// publish scales m's statistical error to CoverageSigmas.
func publish(m timebase.LinearModel) timebase.LinearModel {
	m.ResidualNS *= CoverageSigmas
	m.SlopeErr *= CoverageSigmas
	return m
}

// fitpointBias bounds the bias of a pair's fitpoints (ns), which every
// fitpoint shares and the fit cannot see: a fitpoint subtracts half the
// pair's mean RTT from one sample, whose true one-way delays differ from
// that half by up to about half the spread between the mean and the best
// RTT (for exponential jitter of mean J the bias is (ln 2 − 1)·J, and the
// spread is ≈ 2J). Link asymmetry is invisible and not included.
func fitpointBias(r RTT) int64 {
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
func (s *session) offset(ctx context.Context, client, ref int, slope float64) (OffsetEstimate, float64, error) {
	est, exact, err := skampiFine(ctx, s, client, ref, SKaMPIConfig{
		Min:     s.p.MinPingPongs,
		Max:     s.p.MaxPingPongs,
		BestRTT: s.rtt.Best(client, ref),
		Slope:   slope,
	})
	if err != nil {
		return OffsetEstimate{}, 0, err
	}
	s.rtt.Observe(client, ref, est.MinRTT)
	return est, exact, nil
}

// SKaMPIOffsetOnly measures each rank's offset from the root, one rank at a
// time, with SKaMPI's interval method, and models no drift: the baseline
// that shows why drift matters. Its models' Uncertainty assumes the worst
// slope allowed (MaxSlope), so it grows by 0.5 µs per millisecond.
type SKaMPIOffsetOnly struct{}

// Name implements Algorithm.
func (SKaMPIOffsetOnly) Name() string { return "skampi" }

// Sync implements Algorithm.
func (a SKaMPIOffsetOnly) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	for r := 1; r < net.Size(); r++ {
		est, _, err := s.offset(s.ctx, r, 0, 0)
		if err != nil {
			if err := s.fail(r, fmt.Errorf("skampi: rank %d: %w", r, err)); err != nil {
				return Result{}, err
			}
			continue
		}
		m := est.Model(0, timebase.LinearModel{})
		m.N, m.MeanX, m.SlopeErr = 1, est.At, MaxSlope
		s.res.Models[r] = m
	}
	return s.finish(), nil
}

// JK is Jones & Koenig's method: the root goes round-robin over all ranks for
// each fitpoint, and every rank fits its own line against the root. O(p·F·E)
// exchanges, all through the root.
type JK struct{}

// Name implements Algorithm.
func (JK) Name() string { return "jk" }

// Sync implements Algorithm.
func (a JK) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	pairs := make([]pair, 0, net.Size())
	for r := 1; r < net.Size(); r++ {
		pairs = append(pairs, pair{client: r, ref: 0})
	}
	models, err := s.fitPairs(pairs, nil)
	if err != nil {
		return Result{}, fmt.Errorf("jk: %w", err)
	}
	for i, m := range models {
		if s.ok(i + 1) {
			s.res.Models[i+1] = publish(m.model())
		}
	}
	return s.finish(), nil
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
type HCA struct{}

// Name implements Algorithm.
func (HCA) Name() string { return "hca" }

// held is a model of rank relative to whoever holds it. TreeOffsetOnly also
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
					_ = s.fail(h.rank, fmt.Errorf("via rank %d: %w", pr.client, ErrUpstream))
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
func (a HCA) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	all, fits, err := s.fittedTree()
	if err != nil {
		return Result{}, fmt.Errorf("hca: tree: %w", err)
	}
	slopes, err := s.climb(a.Name(), measured(all, fits), mergeHeld)
	if err != nil {
		return Result{}, err
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
				return Result{}, err
			}
			continue
		}
		s.res.Models[r] = publish(offsetFine(est, exact, m.Slope, m.LinearModel).model())
	}
	return s.finish(), nil
}

// HCA2 is HCA with hierarchical intercepts: the same tree, but once the
// lines are fitted every child re-measures its intercept against its
// parent with SKaMPI's method (carried along the pair's slope), a tree
// round at a time, and the models, intercepts included, are merged up the
// tree. Every step is a tree round: O(log p) rounds and no O(p) phase at
// the root, at the price of intercept errors that add up along the depth.
type HCA2 struct{}

// Name implements Algorithm.
func (HCA2) Name() string { return "hca2" }

// Sync implements Algorithm.
func (a HCA2) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	all, fits, err := s.fittedTree()
	if err != nil {
		return Result{}, fmt.Errorf("hca2: tree: %w", err)
	}
	// Then every child re-measures its intercept against its parent,
	// carried along the pair's slope, a tree round at a time (each call
	// writes only its own pair's model).
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	idx = s.live(all, idx, false)
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
		return Result{}, fmt.Errorf("hca2: %w", err)
	}
	models, err := s.climb(a.Name(), measured(all, fits), mergeHeld)
	if err != nil {
		return Result{}, err
	}
	for r := 1; r < net.Size(); r++ {
		if s.ok(r) {
			s.res.Models[r] = publish(models[r].model.model())
		}
	}
	return s.finish(), nil
}

// TreeOffsetOnly is Netgauge's offset-only tree: each pair of the HCA tree
// measures the child's offset from its parent with the min-RTT sample of
// MaxPingPongs ping-pongs (MinRTTOffset), and the offsets are summed up the
// tree. No drift is modelled. Its models' Uncertainty is the sum of the
// per-level half-RTTs plus, as for SKaMPIOffsetOnly, the worst slope
// (MaxSlope) over the time since the newest level was measured and over the
// lag between the levels' measurements.
type TreeOffsetOnly struct{}

// Name implements Algorithm.
func (TreeOffsetOnly) Name() string { return "tree" }

// Sync implements Algorithm.
func (a TreeOffsetOnly) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	measure := func(pairs []pair) ([]held, error) {
		out := make([]held, len(pairs))
		idx := make([]int, len(pairs))
		for i := range idx {
			idx[i] = i
		}
		err := s.forPairs(pairs, idx, func(ctx context.Context, i int) error {
			pr := pairs[i]
			est, err := MinRTTOffset(ctx, s, pr.client, pr.ref, s.p.MaxPingPongs)
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
		return Result{}, err
	}
	for r := 1; r < net.Size(); r++ {
		if !s.ok(r) {
			continue
		}
		h := models[r]
		m := h.model.model()
		m.N, m.MeanX, m.SlopeErr, m.ResidualNS = 1, h.last, MaxSlope, 0
		m.FloorNS += int64(math.Ceil(MaxSlope * math.Abs(h.lag)))
		s.res.Models[r] = m
	}
	return s.finish(), nil
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
type HCA3 struct{}

// Name implements Algorithm.
func (HCA3) Name() string { return "hca3" }

// Sync implements Algorithm.
func (a HCA3) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
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
		return Result{}, fmt.Errorf("hca3: %w", err)
	}
	for r := 1; r < net.Size(); r++ {
		if s.ok(r) {
			s.res.Models[r] = publish(global[r].model())
		}
	}
	return s.finish(), nil
}
