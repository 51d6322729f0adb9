package judge

import (
	"errors"
	"fmt"
	"math"
)

// State is a judged clock's state.
type State uint8

const (
	Unknown  State = iota // no sample yet
	Locked                // synchronised, bound within the threshold for MinSamples samples
	Holdover              // was LOCKED, lost its reference, predicted bound still within the threshold
	Freerun               // anything else
)

// States lists every state, in order (for one gauge per state).
var States = [...]State{Unknown, Locked, Holdover, Freerun}

var stateNames = [...]string{"UNKNOWN", "LOCKED", "HOLDOVER", "FREERUN"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Config is how a clock is judged.
type Config struct {
	// ThresholdNS: LOCKED needs an error bound at most this.
	ThresholdNS int64
	// MarginNS is the hysteresis: a clock becomes LOCKED only with bounds
	// at most ThresholdNS − MarginNS, and leaves LOCKED only with one over
	// ThresholdNS, so a bound wavering about the threshold does not flap
	// (0: none).
	MarginNS int64
	// HoldoverNS: how long a clock that lost its reference stays in
	// HOLDOVER at the most.
	HoldoverNS int64
	// MinSamples: consecutive good samples to become LOCKED.
	MinSamples int
	// StaleNS: a LOCKED clock with no sample for this long has lost its
	// reference (the source's interval and timeout, with a margin); 0 never.
	StaleNS int64
	// MinDriftPPB is the least rate (ns per second) at which a bound grows
	// once the reference is lost, whatever frequency error the source
	// reports (a daemon reporting 0 knows its frequency only while it has
	// a reference); 0 none.
	MinDriftPPB int64
}

// Validate names the first setting that cannot judge.
func (c Config) Validate() error {
	switch {
	case c.ThresholdNS <= 0:
		return fmt.Errorf("threshold must be positive, got %d ns", c.ThresholdNS)
	case c.MarginNS < 0 || c.MarginNS >= c.ThresholdNS:
		return fmt.Errorf("margin must be at least 0 and below the threshold %d ns, got %d ns", c.ThresholdNS, c.MarginNS)
	case c.HoldoverNS <= 0:
		return fmt.Errorf("holdover must be positive, got %d ns", c.HoldoverNS)
	case c.MinSamples < 1:
		return fmt.Errorf("min_samples must be at least 1, got %d", c.MinSamples)
	case c.StaleNS < 0:
		return errors.New("stale must not be negative")
	case c.MinDriftPPB < 0:
		return errors.New("min drift must not be negative")
	}
	return nil
}

// Sample is one observation of a judged clock.
type Sample struct {
	TimeNS int64 // when it was taken (the event: T4, t2, the reading), REALTIME
	// MonoNS is the same instant on the steady clock (Instant): the judge
	// measures every duration on it. 0: a Set's Judged places TimeNS on its
	// Timeline; a Clock needs it set.
	MonoNS   int64
	Synced   bool  // the source reports itself synchronised to its reference
	OffsetNS int64 // the clock against its reference
	BoundNS  int64 // the error bound, ≥ 0 (bound.go)
	// FreqErrPPB is how fast the bound grows once the reference is lost
	// (the source's frequency error, e.g. chronyd's skew), ≥ 0; negative
	// for unknown: the judge then uses the drift of the offsets it saw.
	// Either way at least Config.MinDriftPPB.
	FreqErrPPB int64
	// Unsynced is why the source is not synchronised (Synced false):
	// ReasonUnsynced when empty, or a more precise constant
	// (ReasonLocalReference).
	Unsynced Reason
}

// Reason says why a transition happened. The reasons are constants, so a
// transition allocates nothing.
type Reason string

const (
	ReasonLocked         Reason = "bound within threshold for min_samples samples"
	ReasonOverBound      Reason = "bound over threshold"
	ReasonOverLock       Reason = "bound over threshold less margin"
	ReasonOffset         Reason = "offset beyond threshold"
	ReasonUnsynced       Reason = "source not synchronised"
	ReasonLocalReference Reason = "source on its local reference"
	ReasonLost           Reason = "reference lost"
	ReasonStale          Reason = "no fresh sample"
	ReasonHoldoverEnd    Reason = "holdover ended"
	ReasonPredicted      Reason = "predicted bound over threshold"
)

// Transition is a change of state, at the time of what caused it.
type Transition struct {
	// TimeNS is REALTIME: the sample's, or the deadline's on the steady
	// clock labelled with the latest REALTIME − steady offset; never
	// before the previous transition's (1 ns after it at least).
	TimeNS   int64
	From, To State
	Reason   Reason
	OffsetNS int64 // the last offset known at TimeNS
	BoundNS  int64 // the bound at TimeNS (predicted in HOLDOVER)
}

// Clock is the state machine of one judged clock. Its zero value is not
// usable: New. Durations are measured on the steady clock (Sample.MonoNS,
// Instant.MonoNS); REALTIME only labels.
type Clock struct {
	cfg   Config
	state State
	since int64 // REALTIME label of the last transition, never decreasing
	good  int   // consecutive good samples (bound within the threshold)
	lock  int   // consecutive samples good enough to lock (within threshold − margin)
	off   int64 // REALTIME − steady of the latest input: labels deadlines

	last    Sample // the latest sample
	hasLast bool
	lostAt  int64 // steady time the reference was lost (HOLDOVER)
	// predicting: the reference is lost and nothing measured since, so
	// the bound is the last good one grown by the frequency error.
	predicting bool
	anchor     Sample // the last good sample: the holdover prediction starts from it
	first      Sample // the first good sample of the current good run (drift estimate)
	freqPPB    int64  // frequency error used for the prediction (≥ MinDriftPPB)
	missed     uint64 // samples due that did not come (Missed)
}

// New returns the state machine of one clock, UNKNOWN.
func New(cfg Config) (*Clock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Clock{cfg: cfg}, nil
}

// State is the current state and the REALTIME it was entered (0 for
// UNKNOWN).
func (c *Clock) State() (State, int64) { return c.state, c.since }

// Last is the latest sample and whether there is one.
func (c *Clock) Last() (Sample, bool) { return c.last, c.hasLast }

// Offset is the offset the clock's bound stands on: the last sample's, but
// while the bound is a prediction (HOLDOVER, or FREERUN from one) the last
// good sample's, which it is predicted from. A sample that could not
// confirm the clock (over the threshold, unsynchronised) is in its
// source's records; shown with the predicted bound it made a view whose
// |offset| passed its bound (37 ms against 4.8 ms: a delayed exchange under
// emulation), which no reader can take as an interval.
func (c *Clock) Offset() int64 {
	if c.predicting {
		return c.anchor.OffsetNS
	}
	return c.last.OffsetNS
}

// Outlier says the clock is FREERUN only for what its reference says of
// it, at steady time mono: its latest sample is synchronised, fresh (at
// most StaleNS old), not a holdover's prediction, and its own uncertainty
// (bound − |offset|) within the threshold: the offset alone put it over.
// Its reference still measures, narrowly, and a cross-check may weigh it
// (package vote: a reference off by far more than its uncertainty is a
// falseticker, or the clock is truly off).
func (c *Clock) Outlier(mono int64) bool {
	if c.state != Freerun || !c.hasLast || c.predicting || !c.last.Synced || c.last.BoundNS == math.MaxInt64 {
		return false
	}
	if c.cfg.StaleNS > 0 && mono-c.last.MonoNS > c.cfg.StaleNS {
		return false
	}
	u := c.last.BoundNS - Abs(c.last.OffsetNS)
	return u >= 0 && u <= c.cfg.ThresholdNS
}

// MissedCount is how many samples were due and did not come.
func (c *Clock) MissedCount() uint64 { return c.missed }

// Bound is the clock's error bound at steady time mono: the last sample's,
// grown by the frequency error since the reference was lost (in HOLDOVER
// and after); math.MaxInt64 before any sample.
func (c *Clock) Bound(mono int64) int64 {
	switch {
	case !c.hasLast:
		return math.MaxInt64
	case c.predicting:
		return grow(c.anchor.BoundNS, c.freqPPB, mono-c.anchor.MonoNS)
	}
	return c.last.BoundNS
}

// Changes is what one call changed: at most two transitions (a holdover
// that ended before the sample, then the sample's own), in time order.
type Changes struct {
	n  int
	tr [2]Transition
}

// All is the transitions, in order.
func (c *Changes) All() []Transition { return c.tr[:c.n] }

func (c *Changes) add(tr Transition, ok bool) {
	if ok {
		c.tr[c.n] = tr
		c.n++
	}
}

// Observe feeds a sample and returns the transitions it causes: first what
// the passing of time up to it caused (Advance), then the sample's.
func (c *Clock) Observe(s Sample) (ch Changes) {
	ch.add(c.Advance(Instant{RealNS: s.TimeNS, MonoNS: s.MonoNS}))
	ch.add(c.observe(s))
	return ch
}

func (c *Clock) observe(s Sample) (Transition, bool) {
	good := s.Synced && s.BoundNS >= 0 && s.BoundNS <= c.cfg.ThresholdNS
	lockable := good && s.BoundNS <= c.cfg.ThresholdNS-c.cfg.MarginNS
	c.last, c.hasLast = s, true
	if s.Synced {
		c.predicting = false // measured again: the bound is the sample's
	}
	if lockable {
		c.lock++
	} else {
		c.lock = 0
	}
	if good {
		if c.good == 0 {
			c.first = s
		}
		c.good++
		c.anchor = s
		c.freqPPB = c.freq(s)
		if c.state != Locked && c.lock >= c.cfg.MinSamples {
			return c.to(Locked, s.TimeNS, s.MonoNS, ReasonLocked, s.OffsetNS, s.BoundNS), true
		}
		if !lockable && c.state == Unknown {
			// Within the threshold but not below it by the margin: not
			// shown bad, not good enough to lock either.
			return c.to(Freerun, s.TimeNS, s.MonoNS, ReasonOverLock, s.OffsetNS, s.BoundNS), true
		}
		return Transition{}, false
	}
	c.good = 0
	if !s.Synced {
		r := s.Unsynced
		if r == "" {
			r = ReasonUnsynced
		}
		switch c.state {
		case Locked: // the reference is gone, not the clock
			return c.lose(s.TimeNS, s.MonoNS, r)
		case Unknown:
			return c.to(Freerun, s.TimeNS, s.MonoNS, r, s.OffsetNS, c.Bound(s.MonoNS)), true
		}
		return Transition{}, false
	}
	// Measured, and the bound is over the threshold. The clock is shown
	// bad only when even the least error the sample allows, |offset| less
	// what the measurement cannot see (bound − |offset|), is over it; else
	// the sample merely cannot confirm the clock, whose bound predicted
	// from the last good sample still holds: HOLDOVER.
	if lower := Abs(s.OffsetNS) - (s.BoundNS - Abs(s.OffsetNS)); lower > c.cfg.ThresholdNS || c.state == Unknown || c.state == Freerun {
		if c.state == Freerun {
			return Transition{}, false
		}
		r := ReasonOffset
		if lower <= c.cfg.ThresholdNS {
			r = ReasonOverBound
		}
		return c.to(Freerun, s.TimeNS, s.MonoNS, r, s.OffsetNS, s.BoundNS), true
	}
	if c.state == Locked {
		return c.lose(s.TimeNS, s.MonoNS, ReasonOverBound)
	}
	return Transition{}, false
}

// Missed says the sample due by deadline did not come (a timeout, a failed
// round, a daemon that does not answer): a LOCKED clock has lost its
// reference at the deadline; an UNKNOWN one is FREERUN.
func (c *Clock) Missed(deadline Instant) (ch Changes) {
	ch.add(c.Advance(deadline))
	c.good, c.lock = 0, 0
	c.missed++
	switch c.state {
	case Locked:
		ch.add(c.lose(deadline.RealNS, deadline.MonoNS, ReasonLost))
	case Unknown:
		ch.add(c.to(Freerun, deadline.RealNS, deadline.MonoNS, ReasonLost, 0, math.MaxInt64), true)
	}
	return ch
}

// Advance judges the passing of time up to now: a LOCKED clock without a
// sample for StaleNS loses its reference then, and a HOLDOVER ends when its
// time is up or its predicted bound passes the threshold, whichever is
// first. Both are measured on the steady clock, so a step of REALTIME
// changes neither; the transition is dated when that happened (its steady
// time labelled with now's REALTIME − steady offset), not now.
func (c *Clock) Advance(now Instant) (Transition, bool) {
	c.off = now.RealNS - now.MonoNS
	switch c.state {
	case Locked:
		if c.cfg.StaleNS > 0 && c.hasLast && now.MonoNS-c.last.MonoNS > c.cfg.StaleNS {
			c.good, c.lock = 0, 0
			at := c.last.MonoNS + c.cfg.StaleNS
			return c.lose(at+c.off, at, ReasonStale)
		}
	case Holdover:
		end, reason := c.lostAt+c.cfg.HoldoverNS, ReasonHoldoverEnd
		if p, ok := c.crossing(); ok && p < end {
			end, reason = p, ReasonPredicted
		}
		if now.MonoNS >= end {
			return c.to(Freerun, end+c.off, end, reason, c.Offset(), c.Bound(end)), true
		}
	}
	return Transition{}, false
}

// Due is the steady time (ns) at which Advance makes a transition if no
// sample comes first: a LOCKED clock going stale, a HOLDOVER ending or its
// predicted bound crossing the threshold. False when time alone changes
// nothing (UNKNOWN, FREERUN, LOCKED without a staleness limit): then only a
// sample does. A caller can sleep until then instead of polling Advance.
func (c *Clock) Due() (int64, bool) {
	switch c.state {
	case Locked:
		if c.cfg.StaleNS > 0 && c.hasLast {
			return c.last.MonoNS + c.cfg.StaleNS + 1, true
		}
	case Holdover:
		end := c.lostAt + c.cfg.HoldoverNS
		if p, ok := c.crossing(); ok && p < end {
			end = p
		}
		return end, true
	}
	return 0, false
}

// lose moves a LOCKED clock that lost its reference at mono (labelled
// real) to HOLDOVER, or straight to FREERUN when its predicted bound is
// already over.
func (c *Clock) lose(real, mono int64, reason Reason) (Transition, bool) {
	c.lostAt, c.predicting = mono, true
	b := grow(c.anchor.BoundNS, c.freqPPB, mono-c.anchor.MonoNS)
	if b > c.cfg.ThresholdNS {
		return c.to(Freerun, real, mono, ReasonPredicted, c.Offset(), b), true
	}
	return c.to(Holdover, real, mono, reason, c.Offset(), b), true
}

// crossing is the steady time the predicted bound passes the threshold.
func (c *Clock) crossing() (int64, bool) {
	if c.freqPPB <= 0 {
		return 0, false
	}
	room := c.cfg.ThresholdNS - c.anchor.BoundNS
	if room < 0 {
		return c.anchor.MonoNS, true
	}
	// room ns at freqPPB ns per second: room·1e9/freq ns, rounded up.
	dt := mulDiv(room, 1e9, c.freqPPB)
	return c.anchor.MonoNS + dt + 1, true
}

// to enters state s at steady time mono, labelled real: the label is never
// before the previous transition's, so since never goes back (a late
// sample, a step of REALTIME back) and agrees with the records dated by it.
func (c *Clock) to(s State, real, mono int64, r Reason, off, bound int64) Transition {
	if c.state != Unknown && real <= c.since {
		real = c.since + 1
	}
	tr := Transition{TimeNS: real, From: c.state, To: s, Reason: r, OffsetNS: off, BoundNS: bound}
	c.state, c.since = s, real
	return tr
}

// freq is the frequency error the prediction uses after sample s: the
// source's, or the drift of the offsets over the current good run; at
// least MinDriftPPB.
func (c *Clock) freq(s Sample) int64 {
	if s.FreqErrPPB >= 0 {
		return max(s.FreqErrPPB, c.cfg.MinDriftPPB)
	}
	dt := s.MonoNS - c.first.MonoNS
	if dt <= 0 {
		return max(c.freqPPB, c.cfg.MinDriftPPB)
	}
	d := s.OffsetNS - c.first.OffsetNS
	if d < 0 {
		d = -d
	}
	// Two samples' offsets each carry their bound: the drift they show is
	// known only to within (b1 + b2)/dt, which is added.
	return max(mulDiv(d+s.BoundNS+c.first.BoundNS, 1e9, dt), c.cfg.MinDriftPPB)
}

// grow is bound b after dt ns at freq ppb (ns per second), saturating.
func grow(b, freqPPB, dt int64) int64 {
	if dt <= 0 || freqPPB <= 0 {
		return b
	}
	g := mulDiv(dt, freqPPB, 1e9)
	if g > math.MaxInt64-b {
		return math.MaxInt64
	}
	return b + g
}

// mulDiv is a·b/d for a, b ≥ 0 and d > 0, rounded up, saturating at
// math.MaxInt64.
func mulDiv(a, b, d int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	q := float64(a) * float64(b) / float64(d)
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	// Exact when the product fits; float only beyond it.
	if a <= math.MaxInt64/b {
		p := a * b
		return (p + d - 1) / d
	}
	return int64(math.Ceil(q))
}
