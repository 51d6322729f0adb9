package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/monagent/monagent/timebase"
)

// SimHorizonNS is the most simulated time a simNetwork runs for (100,000 h,
// about 11 years) and the most that any of its times (offsets, latency,
// jitter, asymmetry, delays, start) may be: every reading then stays well
// within int64 nanoseconds. An exchange or pause that would pass the
// horizon fails with errSimHorizon.
const SimHorizonNS = int64(100_000 * time.Hour)

// errSimHorizon is an exchange or pause that would run a simNetwork past
// SimHorizonNS: links too slow, or fitpoints spaced too far, for the
// exchanges asked for. It ends a synchronisation even with KeepGoing.
var errSimHorizon = errors.New("hca: simulated time would pass the horizon of 100,000 h (links too slow, or fitpoints too far apart, for the exchanges asked for)")

// MaxDriftPPM is the largest SimConfig.DriftPPM: a crystal is within
// ±100 ppm of nominal, and beyond a pair's maxSlope the fits are rejected.
const MaxDriftPPM = 1000

// SimConfig describes a simulated network. Times are nanoseconds; the zero
// value of every field but Nodes is a valid (noiseless) choice.
type SimConfig struct {
	Nodes int    // p, at least 1
	Seed  uint64 // seeds clocks and links; equal configs give equal runs

	// Clocks: node i reads C_i(t) = t + round(d_i·t) + o_i at base time t,
	// with d_i drawn uniformly from ±DriftPPM and o_i from ±OffsetNS.
	// Drifts and Offsets, when non-nil, give d_i (dimensionless, 1e-6 is
	// 1 ppm) and o_i explicitly and must have Nodes entries.
	DriftPPM float64
	OffsetNS int64
	Drifts   []float64
	Offsets  []int64
	// RootIsBase gives node 0 d = 0 and o = 0. Either way the root's clock,
	// not the base time, is the reference of the global timeline.
	RootIsBase bool

	// Links: every message takes LatencyNS plus an exponentially distributed
	// jitter of mean JitterNS. Messages from a lower to a higher rank take
	// AsymmetryNS longer than the reverse direction (negative: shorter).
	LatencyNS   int64
	JitterNS    int64
	AsymmetryNS int64
	// ProcessingNS is the time between an answer's request arriving and the
	// answer leaving; the answering node reads its clock half way through,
	// so processing lengthens the round trip without biasing its midpoint.
	ProcessingNS int64
	// With probability DelayProb an answer is held up for a further time
	// drawn uniformly from [DelayMinNS, DelayMaxNS] (a busy peer).
	DelayProb  float64
	DelayMinNS int64
	DelayMaxNS int64

	// Loss is the probability that an exchange loses its request or its
	// answer; the exchange then fails with ErrLost after TimeoutNS of
	// simulated time (1 ms when zero).
	Loss      float64
	TimeoutNS int64

	StartNS int64 // base time when the simNetwork is made
}

// simStats counts what a simNetwork has carried.
type simStats struct {
	Exchanges int64 // exchanges attempted, lost ones included
	Messages  int64 // requests and answers sent (a lost exchange sent 1 or 2)
	Lost      int64 // exchanges that failed with ErrLost
}

// simNetwork is an in-memory Network over simulated time. It is sequential: one
// exchange at a time, each starting at the current base time and advancing
// it by its round trip (or by the timeout when lost). Concurrency between
// pairs is modelled by Parallel, which runs its calls one after the other
// but each from the same start time, so that a parallel round takes as long
// as its slowest call. Nothing sleeps; a run with thousands of nodes takes
// as long as its arithmetic.
//
// simNetwork is safe for concurrent use; concurrent exchanges are serialised.
type simNetwork struct {
	cfg    SimConfig
	drift  []float64
	offset []int64

	mu    sync.Mutex
	rng   *rand.Rand
	t     int64
	stats simStats
}

// newSimNetwork returns a simulated network as described by cfg.
func newSimNetwork(cfg SimConfig) (*simNetwork, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("hca sim: %w", err)
	}
	if cfg.TimeoutNS == 0 {
		cfg.TimeoutNS = 1_000_000
	}
	s := &simNetwork{
		cfg:    cfg,
		drift:  make([]float64, cfg.Nodes),
		offset: make([]int64, cfg.Nodes),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		t:      cfg.StartNS,
	}
	for i := range cfg.Nodes {
		// Always draw both, so that explicit values for some fields do not
		// change the random stream of the others.
		d := (2*s.rng.Float64() - 1) * cfg.DriftPPM * 1e-6
		o := int64(math.Round((2*s.rng.Float64() - 1) * float64(cfg.OffsetNS)))
		if cfg.Drifts != nil {
			d = cfg.Drifts[i]
		}
		if cfg.Offsets != nil {
			o = cfg.Offsets[i]
		}
		s.drift[i], s.offset[i] = d, o
	}
	if cfg.RootIsBase {
		s.drift[0], s.offset[0] = 0, 0
	}
	return s, nil
}

func (c SimConfig) validate() error {
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("nodes %d: need at least 1", c.Nodes)
	case c.Drifts != nil && len(c.Drifts) != c.Nodes:
		return fmt.Errorf("drifts: %d values for %d nodes", len(c.Drifts), c.Nodes)
	case c.Offsets != nil && len(c.Offsets) != c.Nodes:
		return fmt.Errorf("offsets: %d values for %d nodes", len(c.Offsets), c.Nodes)
	case !(c.DriftPPM >= 0 && c.DriftPPM <= MaxDriftPPM): // NaN too
		return fmt.Errorf("drift_ppm %g: want 0..%d", c.DriftPPM, MaxDriftPPM)
	case c.OffsetNS < 0 || c.LatencyNS < 0 || c.JitterNS < 0 || c.ProcessingNS < 0 || c.TimeoutNS < 0:
		return errors.New("offset, latency, jitter, processing and timeout must not be negative")
	case max(c.OffsetNS, c.LatencyNS, c.JitterNS, c.ProcessingNS, c.TimeoutNS, c.DelayMaxNS, c.AsymmetryNS, -c.AsymmetryNS, c.StartNS, -c.StartNS) > SimHorizonNS:
		return fmt.Errorf("offset, latency, jitter, asymmetry, processing, timeout, delays and start must be within ±%v", time.Duration(SimHorizonNS))
	case !(c.Loss >= 0 && c.Loss < 1): // NaN too
		return fmt.Errorf("loss %g: want 0 <= loss < 1", c.Loss)
	case !(c.DelayProb >= 0 && c.DelayProb <= 1):
		return fmt.Errorf("delay_prob %g: want 0..1", c.DelayProb)
	case c.DelayMinNS < 0 || c.DelayMaxNS < c.DelayMinNS:
		return fmt.Errorf("delay range [%d, %d] ns is not an interval", c.DelayMinNS, c.DelayMaxNS)
	}
	for i, d := range c.Drifts {
		if math.Abs(d) > MaxDriftPPM*1e-6 || math.IsNaN(d) {
			return fmt.Errorf("drift of node %d is %g: want within ±1000 ppm", i, d)
		}
	}
	return nil
}

// Size implements Network.
func (s *simNetwork) Size() int { return s.cfg.Nodes }

// Exchange implements Network: a ping-pong from node from to node to,
// starting now. The answering node reads its clock half way through its
// processing time.
func (s *simNetwork) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	if err := ctx.Err(); err != nil {
		return Exchange{}, fmt.Errorf("hca sim exchange %d->%d: %w", from, to, err)
	}
	if from < 0 || from >= s.cfg.Nodes || to < 0 || to >= s.cfg.Nodes || from == to {
		return Exchange{}, fmt.Errorf("hca sim exchange %d->%d: ranks must differ and lie in 0..%d", from, to, s.cfg.Nodes-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Exchanges++
	// Draw everything for every exchange so that the stream does not depend
	// on which branch is taken.
	lossDraw, whichDraw := s.rng.Float64(), s.rng.Float64()
	fwd := s.oneWay(from, to)
	back := s.oneWay(to, from)
	delayDraw, delayFrac := s.rng.Float64(), s.rng.Float64()
	if delayDraw < s.cfg.DelayProb {
		back += s.cfg.DelayMinNS + int64(math.Round(delayFrac*float64(s.cfg.DelayMaxNS-s.cfg.DelayMinNS)))
	}
	t0 := s.t
	t1 := t0 + fwd + s.cfg.ProcessingNS + back
	if lossDraw < s.cfg.Loss {
		t1 = t0 + s.cfg.TimeoutNS
	}
	if t1-s.cfg.StartNS > SimHorizonNS {
		return Exchange{}, fmt.Errorf("hca sim exchange %d->%d: %w", from, to, errSimHorizon)
	}
	if lossDraw < s.cfg.Loss {
		s.stats.Lost++
		s.stats.Messages++
		if whichDraw < 0.5 { // the answer was lost, the request got through
			s.stats.Messages++
		}
		s.t = t1
		return Exchange{}, fmt.Errorf("hca sim exchange %d->%d: %w", from, to, ErrLost)
	}
	s.stats.Messages += 2
	tr := t0 + fwd + s.cfg.ProcessingNS/2
	s.t = t1
	return Exchange{
		From:   from,
		To:     to,
		Send:   s.clock(from, t0),
		Remote: s.clock(to, tr),
		Recv:   s.clock(from, t1),
	}, nil
}

// oneWay draws the delay of one message from a to b, its jitter at most
// SimHorizonNS. Called with mu held.
func (s *simNetwork) oneWay(a, b int) int64 {
	d := s.cfg.LatencyNS + int64(math.Round(min(s.rng.ExpFloat64()*float64(s.cfg.JitterNS), float64(SimHorizonNS))))
	switch asym := s.cfg.AsymmetryNS; {
	case a < b && asym > 0:
		d += asym
	case a > b && asym < 0:
		d -= asym
	}
	return d
}

func (s *simNetwork) clock(i int, t int64) int64 {
	return t + int64(math.Round(s.drift[i]*float64(t))) + s.offset[i]
}

// Pause lets ns nanoseconds of simulated time pass; it implements pauser.
func (s *simNetwork) Pause(ctx context.Context, ns int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hca sim pause: %w", err)
	}
	if ns > SimHorizonNS || s.Elapsed()+ns > SimHorizonNS {
		return fmt.Errorf("hca sim pause of %v: %w", time.Duration(ns), errSimHorizon)
	}
	s.Advance(ns)
	return nil
}

// Parallel implements paralleler in simulated time: it calls f(0), ...,
// f(n−1) one after the other (deterministically), setting the base time
// back to the time of the call before each, and leaves it at the latest
// time any of them reached, so that the calls count as concurrent. It
// returns the first error, after which the remaining calls are not made.
// The calls must involve disjoint nodes, and nothing else may use the simNetwork
// meanwhile.
func (s *simNetwork) Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	s.mu.Lock()
	start := s.t
	s.mu.Unlock()
	end := start
	var err error
	for i := range n {
		if err = ctx.Err(); err != nil {
			err = fmt.Errorf("hca sim parallel: %w", err)
			break
		}
		s.mu.Lock()
		s.t = start
		s.mu.Unlock()
		err = f(ctx, i)
		s.mu.Lock()
		end = max(end, s.t)
		s.mu.Unlock()
		if err != nil {
			break
		}
	}
	s.mu.Lock()
	s.t = end
	s.mu.Unlock()
	return err
}

// Advance lets ns nanoseconds of simulated time pass (negative is ignored).
func (s *simNetwork) Advance(ns int64) {
	if ns <= 0 {
		return
	}
	s.mu.Lock()
	s.t += ns
	s.mu.Unlock()
}

// Elapsed is the simulated time since the simNetwork was made (ns).
func (s *simNetwork) Elapsed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t - s.cfg.StartNS
}

// Stats returns the counters.
func (s *simNetwork) Stats() simStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Now returns node i's clock at the current base time.
func (s *simNetwork) Now(i int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock(i, s.t)
}

// Drift returns node i's frequency error d_i (dimensionless).
func (s *simNetwork) Drift(i int) float64 { return s.drift[i] }

// ClockOffset returns node i's o_i, its clock at base time 0.
func (s *simNetwork) ClockOffset(i int) int64 { return s.offset[i] }

// TrueOffset is the ground truth a model of node i should give: node i's
// clock minus the root's clock at the base time when node i reads local.
// Clocks are treated as continuous lines here (no rounding), so the result
// is within a nanosecond of the rounded clocks Exchange reports.
func (s *simNetwork) TrueOffset(i int, local int64) int64 {
	whole, frac := s.trueOffset(i, local)
	return whole + int64(math.Round(frac))
}

// TrueOffsetNS is TrueOffset unrounded: what a model's line, before its
// output is rounded to whole nanoseconds, should give.
func (s *simNetwork) TrueOffsetNS(i int, local int64) float64 {
	whole, frac := s.trueOffset(i, local)
	return float64(whole) + frac
}

// trueOffset returns node i's true offset at local as whole nanoseconds
// plus a small remainder.
func (s *simNetwork) trueOffset(i int, local int64) (int64, float64) {
	if i == 0 {
		return 0, 0
	}
	// Solve t + d_i·t + o_i = local: t = u − e with u = local − o_i and
	// e = u·d_i/(1+d_i); then local − C_0(t) = o_i − o_0 + e − d_0·(u − e).
	// Only the small terms go through floating point.
	u := local - s.offset[i]
	e := float64(u) * s.drift[i] / (1 + s.drift[i])
	small := e - s.drift[0]*(float64(u)-e)
	return s.offset[i] - s.offset[0], small
}

// ModelError is the largest |m.Offset(x) − TrueOffset(i, x)| for x from
// from to to (node i's local time) in steps of step, to included.
func (s *simNetwork) ModelError(i int, m timebase.LinearModel, from, to, step int64) int64 {
	if step <= 0 {
		step = max(to-from, 1)
	}
	var worst int64
	for x := from; ; x += step {
		if x > to {
			x = to
		}
		e := m.Offset(x) - s.TrueOffset(i, x)
		if e < 0 {
			e = -e
		}
		worst = max(worst, e)
		if x == to {
			return worst
		}
	}
}
