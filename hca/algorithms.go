package hca

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
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
	// Retries is how often a lost exchange is retried, and how often a pair
	// is re-measured after its fit was rejected for an absurd slope.
	Retries int
}

// DefaultParams returns parameters for a LAN: 20 fitpoints of 10 exchanges
// 100 ms apart, so that each line spans about 2 s.
func DefaultParams() Params {
	return Params{
		RTTWarmup:    5,
		RTTExchanges: 20,
		Fitpoints:    20,
		Exchanges:    10,
		SpacingNS:    100_000_000,
		MinPingPongs: 5,
		MaxPingPongs: 30,
		Fit:          LeastSquares,
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
	// measurements. For HCA and SKaMPI its floor is the SKaMPI interval's
	// half-width, a hard bound whatever the links' asymmetry; for JK and
	// HCA3 it is the fit's statistical error alone and does not include
	// the fitpoints' bias (about (ln 2 − 1) × the mean jitter per level
	// for exponential jitter), so it under-covers.
	Models    []timebase.LinearModel
	Exchanges int64 // ping-pongs attempted, retries of lost ones included
	Lost      int64 // of which lost
	// Messages counts two per exchange attempted (a lost one is counted in
	// full) plus the model transfers of tree algorithms (one per tree edge
	// up, one per rank for the root's scatter).
	Messages   int64
	DurationNS int64 // on the network's clock (Sim: simulated time)
	Rejected   int   // fits rejected for an absurd slope, then re-measured
}

// Algorithms returns the implemented algorithms in the order of the notes.
func Algorithms() []Algorithm {
	return []Algorithm{SKaMPIOffsetOnly{}, JK{}, HCA{}, HCA3{}}
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
// cache and the result under construction.
type session struct {
	ctx   context.Context
	inner Network
	p     Params
	rtt   *RTTCache
	res   Result
	now   func() int64
	start int64
}

func newSession(ctx context.Context, name string, net Network, p Params) (*session, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: params: %w", name, err)
	}
	if net.Size() < 1 {
		return nil, fmt.Errorf("%s: network of %d nodes", name, net.Size())
	}
	s := &session{ctx: ctx, inner: net, p: p, rtt: NewRTTCache(p.RTTWarmup, p.RTTExchanges)}
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
	return s.res
}

// Size implements Network.
func (s *session) Size() int { return s.inner.Size() }

// Exchange implements Network: it counts, and retries lost exchanges.
func (s *session) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	var err error
	for range s.p.Retries + 1 {
		var e Exchange
		e, err = s.inner.Exchange(ctx, from, to)
		s.res.Exchanges++
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, ErrLost) {
			return Exchange{}, err
		}
		s.res.Lost++
	}
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

// fitPairs measures a line for every pair, the pairs' fitpoints interleaved
// so that each sweep over the pairs starts SpacingNS after the previous
// one: on a real network the pairs of one tree round run concurrently, and
// interleaving is how a serial schedule gives each the same span. net is the
// network the fitpoints see (HCA3 passes one whose answers are in global
// time); RTTs are looked up once per pair before the first fitpoint. A fit
// rejected for an absurd slope is counted and its pair re-measured, up to
// Retries times.
func (s *session) fitPairs(net Network, pairs []pair) ([]timebase.LinearModel, error) {
	models := make([]timebase.LinearModel, len(pairs))
	todo := make([]int, len(pairs))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		rtts := make([]int64, len(todo))
		for k, i := range todo {
			r, err := s.rtt.Get(s.ctx, s, pairs[i].client, pairs[i].ref)
			if err != nil {
				return nil, err
			}
			rtts[k] = r.Mean
		}
		points := make([][]timebase.Point, len(todo))
		for f := range s.p.Fitpoints {
			sweep := s.now()
			for k, i := range todo {
				fp, err := MeasureFitpoint(s.ctx, net, pairs[i].client, pairs[i].ref, rtts[k], s.p.Exchanges)
				if err != nil {
					return nil, err
				}
				points[k] = append(points[k], fp)
			}
			if f < s.p.Fitpoints-1 {
				if err := s.pause(s.p.SpacingNS - (s.now() - sweep)); err != nil {
					return nil, err
				}
			}
		}
		var again []int
		for k, i := range todo {
			m, err := FitLine(points[k], s.p.Fit)
			switch {
			case errors.Is(err, ErrAbsurdSlope) && attempt < s.p.Retries:
				s.res.Rejected++
				again = append(again, i)
			case errors.Is(err, ErrAbsurdSlope):
				s.res.Rejected++
				return nil, fmt.Errorf("pair %d->%d: %d fits rejected: %w", pairs[i].client, pairs[i].ref, attempt+1, err)
			case err != nil:
				return nil, fmt.Errorf("pair %d->%d: %w", pairs[i].client, pairs[i].ref, err)
			default:
				models[i] = m
			}
		}
		todo = again
	}
	return models, nil
}

// offset measures rank's offset from the root with SKaMPI's method, using
// and updating the pair's best RTT for the early stop and carrying the
// intervals along slope.
func (s *session) offset(rank int, slope float64) (OffsetEstimate, error) {
	est, err := SKaMPIOffset(s.ctx, s, rank, 0, SKaMPIConfig{
		Min:     s.p.MinPingPongs,
		Max:     s.p.MaxPingPongs,
		BestRTT: s.rtt.Best(rank, 0),
		Slope:   slope,
	})
	if err != nil {
		return OffsetEstimate{}, err
	}
	s.rtt.Observe(rank, 0, est.MinRTT)
	return est, nil
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
		est, err := s.offset(r, 0)
		if err != nil {
			return Result{}, fmt.Errorf("skampi: rank %d: %w", r, err)
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
	models, err := s.fitPairs(s, pairs)
	if err != nil {
		return Result{}, fmt.Errorf("jk: %w", err)
	}
	copy(s.res.Models[1:], models)
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
type HCA struct{}

// Name implements Algorithm.
func (HCA) Name() string { return "hca" }

// held is a model of rank relative to whoever holds it.
type held struct {
	rank  int
	model timebase.LinearModel
}

// Sync implements Algorithm.
func (a HCA) Sync(ctx context.Context, net Network, p Params) (Result, error) {
	s, err := newSession(ctx, a.Name(), net, p)
	if err != nil {
		return Result{}, err
	}
	size := net.Size()
	rounds, extra := treeRounds(size)
	// holds[r] are the models of r's subtree relative to r.
	holds := make([][]held, size)
	learn := func(pairs []pair) error {
		if len(pairs) == 0 {
			return nil
		}
		models, err := s.fitPairs(s, pairs)
		if err != nil {
			return err
		}
		for i, pr := range pairs {
			lm := models[i] // child relative to parent
			holds[pr.ref] = append(holds[pr.ref], held{pr.client, lm})
			for _, h := range holds[pr.client] {
				holds[pr.ref] = append(holds[pr.ref], held{h.rank, timebase.Merge(lm, h.model)})
			}
			s.res.Messages++ // the child ships its subtree's models up
			holds[pr.client] = nil
		}
		return nil
	}
	if err := learn(extra); err != nil {
		return Result{}, fmt.Errorf("hca: extra round: %w", err)
	}
	for i, round := range rounds {
		if err := learn(round); err != nil {
			return Result{}, fmt.Errorf("hca: round %d: %w", i, err)
		}
	}
	slopes := make([]timebase.LinearModel, size)
	for _, h := range holds[0] {
		slopes[h.rank] = h.model
	}
	if len(holds[0]) != size-1 {
		return Result{}, fmt.Errorf("hca: root holds %d models for %d ranks", len(holds[0]), size-1)
	}
	// The root scatters the models (one message per rank) and re-measures
	// every intercept against itself.
	s.res.Messages += int64(size - 1)
	for r := 1; r < size; r++ {
		est, err := s.offset(r, slopes[r].Slope)
		if err != nil {
			return Result{}, fmt.Errorf("hca: intercept of rank %d: %w", r, err)
		}
		s.res.Models[r] = est.Model(slopes[r].Slope, slopes[r])
	}
	return s.finish(), nil
}

// HCA3 is the top-down variant: the tree is walked from the root down, and a
// parent that is already synchronised answers with its global time (its
// clock mapped through its model), so each child fits its line directly
// against the root's timeline and nothing is merged. The regression's own
// intercept is kept. Errors accumulate down the tree's depth.
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
	global := globalAnswers{s: s, models: s.res.Models}
	learn := func(pairs []pair) error {
		if len(pairs) == 0 {
			return nil
		}
		models, err := s.fitPairs(global, pairs)
		if err != nil {
			return err
		}
		for i, pr := range pairs {
			s.res.Models[pr.client] = models[i]
		}
		return nil
	}
	for i := len(rounds) - 1; i >= 0; i-- {
		if err := learn(rounds[i]); err != nil {
			return Result{}, fmt.Errorf("hca3: round %d: %w", i, err)
		}
	}
	if err := learn(extra); err != nil {
		return Result{}, fmt.Errorf("hca3: extra round: %w", err)
	}
	return s.finish(), nil
}

// globalAnswers is the network as HCA3's children see it: the answering
// node reports its global time, its clock mapped through its current model.
type globalAnswers struct {
	s      *session
	models []timebase.LinearModel
}

func (g globalAnswers) Size() int { return g.s.Size() }

func (g globalAnswers) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	e, err := g.s.Exchange(ctx, from, to)
	if err != nil {
		return Exchange{}, err
	}
	e.Remote = g.models[to].Apply(e.Remote)
	return e, nil
}
