package judging

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/timeapi"
	"github.com/monagent/monagent/timebase"
	"github.com/monagent/monagent/vote"
)

// Publisher publishes the time API (the agent's timeapi section, docs/timeapi.md):
// section "system" after every vote of the system clock's references (each
// judged sample and each judge tick), "global" after every vote of the hca
// clock (rank 0: every tick). Each section is a model over
// CLOCK_MONOTONIC_RAW, which no daemon steps or slews: the true time at
// one instant, the rate of true time against the base clock, a half-width
// and its growth, and the base time after which it is void. Safe for
// concurrent use; a nil Publisher publishes nothing.
type Publisher struct {
	mu       sync.Mutex
	w        segmentWriter
	path     string
	maxAgeNS int64
	system   int // section indices; global is -1 without hca
	global   int
	g        *hca.Global
	rank0    bool
	rate     rtRate
	closed   bool
	invalid  bool         // the last model was out of range (logged once until one is not)
	log      *slog.Logger // nil: not logged
	// read reads MONOTONIC_RAW and REALTIME together (tests script it).
	read func() (timebase.Offset, error)
}

// segmentWriter is what Publisher needs of a *timeapi.Writer.
type segmentWriter interface {
	Publish(i int, m timeapi.Model)
	Void(i int)
	Close() error
}

// Sections of the segment, in order.
const (
	sectionSystem = "system"
	sectionGlobal = "global"
)

// OpenPublisher creates (or reopens in place) the segment at path with
// mode: section "system", and "global" when the agent runs HCA (g its
// model of the global timeline; rank0: it is the timeline's reference).
// Each model turns void maxAge after it is published.
func OpenPublisher(path string, mode os.FileMode, maxAge time.Duration, g *hca.Global, global, rank0 bool, log *slog.Logger) (*Publisher, error) {
	clocks := []string{sectionSystem}
	p := &Publisher{path: path, log: log, maxAgeNS: int64(maxAge), system: 0, global: -1, read: readRawRealtime}
	if global {
		clocks = append(clocks, sectionGlobal)
		p.global, p.g, p.rank0 = 1, g, rank0
	}
	// Create takes the file's lock (one agent per segment) and sets every
	// section UNKNOWN: what a previous agent left is not this one's
	// knowledge.
	w, err := timeapi.Create(path, mode, clocks)
	if err != nil {
		return nil, err
	}
	p.w = w
	return p, nil
}

// readRawRealtime reads MONOTONIC_RAW, REALTIME, MONOTONIC_RAW three times
// and keeps the narrowest window.
func readRawRealtime() (timebase.Offset, error) {
	return timebase.ReadOffset(timebase.SystemClock.Now, timebase.MonotonicRaw, timebase.Realtime, 3)
}

// Close marks every section void (readers get an error, never the last
// interval) and closes the segment; the file stays, so that readers see
// the sections come back after a restart without reopening it.
func (p *Publisher) Close(log *slog.Logger) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.w.Void(p.system)
	if p.global >= 0 {
		p.w.Void(p.global)
	}
	if err := p.w.Close(); err != nil {
		log.Error("time API: close the segment", "path", p.path, "err", err)
	}
}

// publishSystem publishes the system clock's vote r (state st, the
// clock's threshold): its combined interval on the clock's offsets
// (offset = system clock − true time), centred on the truth, not on the
// clock: true time = REALTIME − the interval's midpoint, within its
// half-width. refs are the vote's references (the oldest voting sample's
// age is added at the growth rate: a LOCKED reference's bound is as of its
// sample).
func (p *Publisher) publishSystem(st judge.State, r *vote.Result, refs []vote.Ref, thresholdNS int64) {
	if p == nil {
		return
	}
	m, ok := p.begin(p.system, st)
	if !ok {
		return
	}
	defer p.end(p.system, &m)
	lo, hi := r.LoNS, r.HiNS
	if !r.Valid || r.Status == vote.Disputed || r.Status == vote.None || st == judge.Unknown || st == judge.Freerun || hi < lo || hi-lo > 1<<62 {
		return // void now: no interval to trust (FREERUN: not one within the threshold), or unusable, saturated ends
	}
	mid := lo + (hi-lo)/2
	oldest := m.RealtimeNS
	for i := range r.Refs {
		if r.Refs[i].Voting && i < len(refs) && refs[i].SampleNS > 0 {
			oldest = min(oldest, refs[i].SampleNS)
		}
	}
	m.TrueNS = m.RealtimeNS - mid
	m.BoundNS = satAdd(hi-mid, growNS(m.RealtimeNS-oldest, m.GrowthPPB), m.BoundNS)
	m.VoidNS = p.voidAt(m, st, thresholdNS)
}

// publishGlobal publishes the HCA global timeline: rank 0's HCA clock as
// this agent's model of it (hca.Global) places MONOTONIC_RAW now, with the
// model's bound; rank 0's own is its clock, exact. st is the hca clock's
// judged state (rank 0: LOCKED).
func (p *Publisher) publishGlobal(st judge.State) {
	if p == nil {
		return
	}
	m, ok := p.begin(p.global, st)
	if !ok {
		return
	}
	defer p.end(p.global, &m)
	raw, next := m.BaseNS, m.BaseNS+1e9
	var g0, g1, b0, b1 int64
	switch _, _, _, has := p.g.FromRaw(raw); {
	case p.rank0:
		g0, g1 = p.g.Local(raw), p.g.Local(next)
	case has && (st == judge.Locked || st == judge.Holdover):
		_, g0, b0, _ = p.g.FromRaw(raw)
		_, g1, b1, _ = p.g.FromRaw(next)
	default:
		return // no model yet, or FREERUN: void
	}
	m.TrueNS, m.RatePPB = g0, g1-g0-1e9
	// The model's own growth (its slope's error, from the fit's points
	// onward) and the crystals' wander while no sync comes.
	m.GrowthPPB = max(b1-b0, 0) + minDriftPPB
	m.BoundNS = satAdd(b0, 1)
	m.VoidNS = p.voidAt(m, st, 0)
}

// begin locks p and reads both clocks into a new model of section i (-1:
// none) in state st, void at once unless the caller sets VoidNS; end
// publishes it and unlocks. Not ok (nothing to publish, p not locked):
// p nil or closed, or the clocks unreadable.
func (p *Publisher) begin(i int, st judge.State) (timeapi.Model, bool) {
	if i < 0 {
		return timeapi.Model{}, false
	}
	p.mu.Lock()
	m, ok := p.model(timeapi.State(st))
	if p.closed || !ok {
		p.mu.Unlock()
		return m, false
	}
	return m, true
}

func (p *Publisher) end(i int, m *timeapi.Model) {
	if err := m.Validate(); err != nil {
		// Out of the readers' ranges (a bound saturated by a sample time
		// far off, a rate beyond 10 %): void rather than a section every
		// reader refuses as malformed.
		if !p.invalid && p.log != nil {
			p.log.Warn("time API: a model out of range is published void", "path", p.path, "section", i, "err", err)
		}
		p.invalid = true
		*m = timeapi.Model{State: m.State, BaseNS: m.BaseNS, TrueNS: m.RealtimeNS, RealtimeNS: m.RealtimeNS, VoidNS: m.BaseNS}
	} else {
		p.invalid = false
	}
	p.w.Publish(i, *m)
	p.mu.Unlock()
}

// model reads both clocks and starts a section's model: base, REALTIME,
// REALTIME's rate against the base clock and the growth that covers that
// rate's error and the clock's drift once no update comes; void now until
// the caller says otherwise.
func (p *Publisher) model(st timeapi.State) (timeapi.Model, bool) {
	o, err := p.read()
	if err != nil {
		return timeapi.Model{}, false
	}
	rate, rateErr := p.rate.note(o)
	rt := o.MidNS + o.OffsetNS
	return timeapi.Model{State: st, BaseNS: o.MidNS, TrueNS: rt, RealtimeNS: rt, RatePPB: rate,
		BoundNS: o.WindowNS/2 + o.WindowNS%2 + 1, GrowthPPB: minDriftPPB + rateErr, VoidNS: o.MidNS}, true
}

// voidAt is when m turns void: after timeapi.max_age, and for a LOCKED or
// HOLDOVER clock once its grown bound would pass the clock's threshold
// (thresholdNS; 0: none), at once when it already has.
func (p *Publisher) voidAt(m timeapi.Model, st judge.State, thresholdNS int64) int64 {
	v := m.BaseNS + p.maxAgeNS
	if thresholdNS > 0 && (st == judge.Locked || st == judge.Holdover) {
		room := thresholdNS - m.BoundNS
		if room <= 0 {
			return m.BaseNS
		}
		if m.GrowthPPB > 0 && room/m.GrowthPPB < p.maxAgeNS/1e9 {
			v = min(v, m.BaseNS+room*1e9/m.GrowthPPB)
		}
	}
	return v
}

// rtRate estimates REALTIME's rate against MONOTONIC_RAW from pairs read
// together (timebase.Offset: REALTIME − MONOTONIC_RAW at a MONOTONIC_RAW
// time, within a read window), over a baseline of 16 to 32 s; a pair off
// the rate by more than judge.StepNS is a step of REALTIME and starts the
// baseline again.
type rtRate struct {
	old, cur timebase.Offset
	have     bool
	ratePPB  int64
	errPPB   int64
}

// rateBaselineNS is the shortest baseline kept once it is reached; the
// longest is twice it.
const rateBaselineNS = 16e9

// maxRateErrPPB is the rate's error with no baseline: the kernel slews
// REALTIME by at most 500 ppm (ADJ_OFFSET, adjtime) plus the frequency's
// ±500 ppm.
const maxRateErrPPB = 1_000_000

// note takes a new pair and returns the rate (ppb: REALTIME runs
// 1 + rate·1e-9 as fast as MONOTONIC_RAW) and its error.
func (e *rtRate) note(o timebase.Offset) (ratePPB, errPPB int64) {
	if e.have {
		dt := o.MidNS - e.cur.MidNS
		dev := o.OffsetNS - e.cur.OffsetNS - mulPPB(dt, e.ratePPB)
		if dt <= 0 || judge.Abs(dev) > judge.StepNS+mulPPB(dt, e.errPPB) {
			e.have = false // a step (or a clock that went back): start again
		}
	}
	if !e.have {
		e.old, e.cur, e.have, e.ratePPB, e.errPPB = o, o, true, 0, maxRateErrPPB
		return e.ratePPB, e.errPPB
	}
	if o.MidNS-e.cur.MidNS >= rateBaselineNS {
		e.old = e.cur
		e.cur = o
	}
	if dt := o.MidNS - e.old.MidNS; dt > 0 {
		e.ratePPB = (o.OffsetNS - e.old.OffsetNS) * 1e9 / dt
		w := (o.WindowNS + e.old.WindowNS + 1) / 2
		e.errPPB = min((w*1e9+dt-1)/dt+1, maxRateErrPPB)
	}
	return e.ratePPB, e.errPPB
}

// mulPPB is d ns at ppb, rounded toward 0 (|d| < 2^63/1e9 s · 1e9).
func mulPPB(d, ppb int64) int64 { return d/1e9*ppb + d%1e9*ppb/1e9 }

// growNS is how far a bound grows in d ns at ppb, rounded up; 0 for d ≤ 0.
func growNS(d, ppb int64) int64 {
	if d <= 0 || ppb <= 0 {
		return 0
	}
	return d/1e9*ppb + (d%1e9*ppb+1e9-1)/1e9
}

// satAdd sums bounds (each ≥ 0), saturating.
func satAdd(v ...int64) int64 { return judge.Sum(v...) }

// String names the segment for logs.
func (p *Publisher) String() string { return fmt.Sprintf("time API %s", p.path) }
