package vote

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/monagent/monagent/judge"
)

// Ref is one reference of a clock as the vote takes it: what its judge
// knows of the latest sample (FromView).
type Ref struct {
	// Source names the reference within its clock ("ntp:10.0.0.1:123",
	// "chrony", "ptp4l"); the Voter follows each reference by it.
	Source string
	// State is the reference's judged state: only LOCKED and HOLDOVER
	// vote.
	State judge.State
	// OffsetNS is the clock against this reference (judge.Sample.OffsetNS).
	OffsetNS int64
	// BoundNS is the judge's error bound, |offset| + the measurement's own
	// uncertainty u (judge/bound.go); in HOLDOVER grown to the vote's now
	// (judge.View does that), or as of SampleNS with GrowPPB set.
	BoundNS int64
	// SampleNS is the latest sample's time (judge.View.LastSampleNS): a
	// value not seen before is a new sample of this reference, which alone
	// advances its dwell (Config).
	SampleNS int64
	// Outlier: the reference is FREERUN only for its latest, fresh
	// sample's offset, its uncertainty within the threshold
	// (judge.View.Outlier): it votes, with that sample's interval.
	Outlier bool
	// GrowPPB, when positive, is the rate (ns per second) at which u grows
	// from SampleNS to the vote's now while the reference is in HOLDOVER;
	// 0 when BoundNS is already grown to now.
	GrowPPB int64
}

// FromView is the Ref of a judged clock's view, its bound already grown to
// the view's time.
func FromView(v judge.View) Ref {
	return Ref{Source: v.Source, State: v.State, OffsetNS: v.OffsetNS, BoundNS: v.BoundNS, SampleNS: v.LastSampleNS, Outlier: v.Outlier}
}

// Config is how a Voter names references.
type Config struct {
	// FlagAfter: a reference is named a falseticker after this many
	// consecutive disagreeing votes, each at a new sample of its own.
	FlagAfter int
	// ClearAfter: a named reference is trusted again after this many
	// consecutive agreeing votes at new samples of its own.
	ClearAfter int
	// StaleNS: a reference whose latest sample is older than this at the
	// vote does not vote, whatever its state; 0: its state alone decides.
	StaleNS int64
}

// Default is FlagAfter 2 and ClearAfter 3 (doc.go says why).
func Default() Config { return Config{FlagAfter: 2, ClearAfter: 3} }

// Validate names the first setting that cannot vote.
func (c Config) Validate() error {
	switch {
	case c.FlagAfter < 1 || c.FlagAfter > 3:
		return fmt.Errorf("vote: flag_after must be 1 to 3 (a liar is named within 3 of its samples), got %d", c.FlagAfter)
	case c.ClearAfter < 1:
		return fmt.Errorf("vote: clear_after must be at least 1, got %d", c.ClearAfter)
	case c.StaleNS < 0:
		return errors.New("vote: stale must not be negative")
	}
	return nil
}

// Status is the outcome of one vote for the clock.
type Status uint8

const (
	None     Status = iota // no reference votes (all stale, FREERUN or UNKNOWN): no answer
	Single                 // one reference votes: not cross-checked, its own interval
	Agreed                 // a majority shares a point: the combined interval
	Disputed               // two or more vote and no single set of them is a majority: none trusted
)

var statusNames = [...]string{"none", "not cross-checked", "agreed", "disputed"}

func (s Status) String() string { return enumName(statusNames[:], "Status", uint8(s)) }

// enumName is names[i], or kind(i) past them.
func enumName(names []string, kind string, i uint8) string {
	if int(i) < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", kind, i)
}

// Verdict is what is said of one reference.
type Verdict uint8

const (
	Absent      Verdict = iota // does not vote (not LOCKED or HOLDOVER, or stale)
	Unchecked                  // the clock's one voting reference: not cross-checked, never "agrees"
	Agrees                     // votes and is not named
	Falseticker                // named: outside the majority at FlagAfter of its own samples in a row
	Contested                  // named while the clock is disputed: no majority to trust or blame it
)

var verdictNames = [...]string{"absent", "not cross-checked", "agrees", "falseticker", "disputed"}

func (v Verdict) String() string { return enumName(verdictNames[:], "Verdict", uint8(v)) }

// Outcome is one reference's part in a vote.
type Outcome struct {
	Source string
	// Voting: the reference voted (LOCKED or HOLDOVER, fresh).
	Voting bool
	// Bad: it voted with an interval that cannot be used (a bound of
	// math.MaxInt64, one below |offset|, an offset of math.MinInt64): it
	// is outside every set, a falseticker's vote.
	Bad bool
	// LoNS, HiNS: its interval [offset − u, offset + u], saturated to
	// ±math.MaxInt64 (Voting and not Bad).
	LoNS, HiNS int64
	// InMajority: it is one of this vote's truechimers (Status Agreed).
	InMajority bool
	// Verdict is the named verdict, after the dwell (Config).
	Verdict Verdict
	// Changed: Verdict differs from the previous vote's (a reference's
	// first vote is a change from Absent); ChangedNS is the time of what
	// changed it: the reference's own sample when its flag turned, else
	// the vote's now.
	Changed   bool
	ChangedNS int64
}

// Result is one vote. Its slices are reused by the next Vote into the same
// Result.
type Result struct {
	Status Status
	// Majority: a majority of the voting references shares a point
	// (Status Agreed); the combined state can be LOCKED only then.
	Majority bool
	// References is how many references the clock has; Voting how many
	// voted; Truechimers how many are in this vote's majority; Agreeing how
	// many are named Agrees (after the dwell).
	References, Voting, Truechimers, Agreeing int
	// Valid: OffsetNS, BoundNS, LoNS, HiNS hold an answer (Agreed, or
	// Single with a usable interval).
	Valid bool
	// LoNS, HiNS is the intersection of the truechimers' intervals (the
	// one voter's interval when Single).
	LoNS, HiNS int64
	// OffsetNS is its midpoint (rounded toward 0), HalfWidthNS its half
	// width (rounded up), BoundNS = max(|LoNS|, |HiNS|) = |OffsetNS| + the
	// half width, exact up to the rounding of the midpoint, never larger
	// than any truechimer's bound.
	OffsetNS, HalfWidthNS, BoundNS int64
	// Named is the sources named Falseticker or Contested, in Refs order.
	Named []string
	// Refs is every reference's outcome, in the order given.
	Refs []Outcome
}

// memory is what the Voter keeps of one reference between votes.
type memory struct {
	source  string
	seen    bool   // lastNS holds a sample
	lastNS  int64  // the latest sample seen
	inRound bool   // a new sample since the current round of samples began
	round   uint64 // the round whose dispute last counted against it
	flagged bool
	run     int // consecutive votes at own samples against the flag
	verdict Verdict
}

type end struct {
	x    int64
	high bool // the interval's high end; low ends sort first at equal x (closed intervals)
}

// Voter votes across the references of one clock, again and again,
// keeping each reference's dwell. It is not safe for concurrent use (the
// agent holds one per clock under its lock). After the first votes (its
// buffers sized to the references) a Vote allocates nothing.
type Voter struct {
	cfg    Config
	mem    []memory
	ends   []end
	rounds uint64 // rounds of samples completed: every LOCKED voter sampled anew
}

// New returns a Voter.
func New(cfg Config) (*Voter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Voter{cfg: cfg}, nil
}

// Vote votes across refs (every reference of the clock, voting or not) at
// now (REALTIME, the time of the sample or tick that calls it) into r.
func (v *Voter) Vote(now int64, refs []Ref, r *Result) {
	v.follow(refs)
	*r = Result{Named: r.Named[:0], Refs: r.Refs[:0], References: len(refs)}
	v.ends = v.ends[:0]
	for i := range refs {
		o := Outcome{Source: refs[i].Source}
		o.Voting = v.votes(now, &refs[i])
		if o.Voting {
			r.Voting++
			var ok bool
			o.LoNS, o.HiNS, ok = interval(now, &refs[i])
			o.Bad = !ok
			if ok {
				v.ends = append(v.ends, end{x: o.LoNS}, end{x: o.HiNS, high: true})
			}
		}
		r.Refs = append(r.Refs, o)
	}
	switch {
	case r.Voting == 0:
		r.Status = None
	case r.Voting == 1:
		r.Status = Single
		for i := range r.Refs {
			if o := &r.Refs[i]; o.Voting && !o.Bad {
				r.answer(o.LoNS, o.HiNS)
			}
		}
	default:
		lo, hi, depth, tie := marzullo(v.ends)
		if depth > 0 && !tie && 2*depth > r.Voting {
			r.Status, r.Majority, r.Truechimers = Agreed, true, depth
			r.answer(lo, hi)
			for i := range r.Refs {
				o := &r.Refs[i]
				o.InMajority = o.Voting && !o.Bad && o.LoNS <= lo && o.HiNS >= hi
			}
		} else {
			r.Status = Disputed
		}
	}
	v.name(now, refs, r)
}

// votes says whether ref votes at now.
func (v *Voter) votes(now int64, ref *Ref) bool {
	if ref.State != judge.Locked && ref.State != judge.Holdover && !(ref.State == judge.Freerun && ref.Outlier) {
		return false
	}
	return v.cfg.StaleNS == 0 || !older(now, ref.SampleNS, v.cfg.StaleNS)
}

// older: now − t > d, without overflow.
func older(now, t, d int64) bool {
	if t >= now {
		return false
	}
	return uint64(now)-uint64(t) > uint64(d)
}

// interval is ref's [offset − u, offset + u], u = bound − |offset| (grown
// to now in HOLDOVER at GrowPPB), saturated to ±math.MaxInt64; false for a
// bound or offset that cannot be used.
func interval(now int64, ref *Ref) (lo, hi int64, ok bool) {
	off, b := ref.OffsetNS, ref.BoundNS
	if off == math.MinInt64 || b >= math.MaxInt64 || b < judge.Abs(off) {
		return 0, 0, false
	}
	u := b - judge.Abs(off)
	if ref.State == judge.Holdover && ref.GrowPPB > 0 && now > ref.SampleNS {
		u = satAdd(u, grow(uint64(now)-uint64(ref.SampleNS), ref.GrowPPB))
	}
	return satAdd(off, -u), satAdd(off, u), true
}

// satAdd is a + b clamped to ±math.MaxInt64, for |a|, |b| ≤ math.MaxInt64.
func satAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0, s == math.MinInt64:
		return -math.MaxInt64
	}
	return s
}

// grow is dt ns at ppb ns per second, rounded up, saturating.
func grow(dt uint64, ppb int64) int64 {
	q := float64(dt) * float64(ppb) / 1e9
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	if dt <= math.MaxInt64/uint64(ppb) { // exact
		p := dt * uint64(ppb)
		return int64((p + 1e9 - 1) / 1e9)
	}
	return int64(math.Ceil(q))
}

// marzullo finds the first region covered by the most intervals: its ends
// lo, hi, that depth, and whether another region, apart from it, is covered
// by as many (a tie). ends holds two entries per interval and is sorted in
// place.
func marzullo(ends []end) (lo, hi int64, depth int, tie bool) {
	slices.SortFunc(ends, func(a, b end) int {
		if c := cmp.Compare(a.x, b.x); c != 0 {
			return c
		}
		switch {
		case a.high == b.high:
			return 0
		case b.high:
			return -1
		}
		return 1
	})
	d, regions, closed := 0, 0, false
	for _, e := range ends {
		if !e.high {
			d++
			switch {
			case d > depth:
				depth, lo, regions, closed = d, e.x, 1, false
			case d == depth:
				regions++
			}
			continue
		}
		if d == depth && regions == 1 && !closed {
			hi, closed = e.x, true
		}
		d--
	}
	return lo, hi, depth, regions > 1
}

// answer sets the combined answer to [lo, hi].
func (r *Result) answer(lo, hi int64) {
	w := uint64(hi) - uint64(lo) // hi ≥ lo, both within ±math.MaxInt64: exact
	mid := lo + int64(w/2)       // floor of the midpoint
	if w%2 == 1 && mid < 0 {
		mid++ // toward 0, so that |mid| + (bound − |mid|) reaches both ends
	}
	r.Valid, r.LoNS, r.HiNS, r.OffsetNS = true, lo, hi, mid
	r.HalfWidthNS = int64((w + 1) / 2)
	r.BoundNS = max(judge.Abs(lo), judge.Abs(hi))
}

// follow lines the Voter's memory up with refs, by source: a reference
// seen before keeps its memory, a new one starts with none, one no longer
// given is forgotten. Allocation only when the set grows.
func (v *Voter) follow(refs []Ref) {
	for i := range refs {
		if i < len(v.mem) && v.mem[i].source == refs[i].Source {
			continue
		}
		j := i + 1
		for j < len(v.mem) && v.mem[j].source != refs[i].Source {
			j++
		}
		if j < len(v.mem) {
			v.mem[i], v.mem[j] = v.mem[j], v.mem[i]
			continue
		}
		// New here: take slot i, moving what held it to the end.
		if i < len(v.mem) {
			v.mem = append(v.mem, v.mem[i])
			v.mem[i] = memory{source: refs[i].Source}
		} else {
			v.mem = append(v.mem, memory{source: refs[i].Source})
		}
	}
	clear(v.mem[len(refs):])
	v.mem = v.mem[:len(refs)]
}

// name advances each reference's dwell and names it.
func (v *Voter) name(now int64, refs []Ref, r *Result) {
	// Which references bring a new sample, and whether that completes a
	// round in which every LOCKED voter has sampled anew (one in HOLDOVER
	// samples no more; its interval grows by itself).
	complete := true
	for i := range r.Refs {
		m := &v.mem[i]
		if !m.seen || m.lastNS != refs[i].SampleNS {
			m.inRound = true
		}
		if o := &r.Refs[i]; o.Voting && !o.Bad && (refs[i].State == judge.Locked || refs[i].Outlier) && !m.inRound {
			complete = false
		}
	}
	if complete {
		v.rounds++
	}
	for i := range r.Refs {
		o, m := &r.Refs[i], &v.mem[i]
		fresh := !m.seen || m.lastNS != refs[i].SampleNS
		m.seen, m.lastNS = true, refs[i].SampleNS
		if complete {
			m.inRound = false
		}
		turned := false
		switch {
		case o.Bad && !m.flagged:
			// Not noise: a bound or offset that cannot be a measurement
			// is named at once, new sample or not.
			m.flagged, m.run, turned = true, 0, true
		case !o.Voting || !fresh:
		case r.Status == Agreed:
			turned = v.dwell(m, o.InMajority)
		case r.Status == Disputed && v.rounds > m.round:
			// A dispute counts against a reference once per round of
			// everyone's samples: a slow reference's one bad sample,
			// lingering over the fast ones' next samples, is one piece
			// of evidence, not several.
			m.round = v.rounds
			turned = v.dwell(m, false)
		}
		switch {
		case !o.Voting:
			o.Verdict = Absent
		case r.Status == Single:
			o.Verdict = Unchecked
		case !m.flagged:
			o.Verdict = Agrees
			r.Agreeing++
		case r.Status == Disputed:
			o.Verdict = Contested
		default:
			o.Verdict = Falseticker
		}
		if o.Verdict == Falseticker || o.Verdict == Contested {
			r.Named = append(r.Named, o.Source)
		}
		if o.Verdict != m.verdict {
			o.Changed, o.ChangedNS = true, now
			if turned {
				o.ChangedNS = refs[i].SampleNS // dated by the sample that turned it
			}
		}
		m.verdict = o.Verdict
	}
}

// dwell counts one vote at a new sample of a reference, agreeing or not,
// and says whether its flag turned.
func (v *Voter) dwell(m *memory, agree bool) bool {
	if agree == !m.flagged {
		m.run = 0
		return false
	}
	m.run++
	need := v.cfg.FlagAfter
	if m.flagged {
		need = v.cfg.ClearAfter
	}
	if m.run < need {
		return false
	}
	m.flagged, m.run = !m.flagged, 0
	return true
}
