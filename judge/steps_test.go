package judge

import (
	"fmt"
	"testing"
)

// virtualClocks is a steady clock and a REALTIME over it that a test steps.
type virtualClocks struct {
	mono, off int64
}

func (v *virtualClocks) read() Instant { return Instant{RealNS: v.mono + v.off, MonoNS: v.mono} }

// T0 is a REALTIME in 2023; the steady clock starts at 1 s.
const T0 = int64(1_700_000_000) * s

// stepRun is one judged clock on virtual clocks: samples each second
// (stamped in REALTIME only, as sources give them, placed on the Set's
// Timeline) and the agent's 200 ms tick.
type stepRun struct {
	t      *testing.T
	v      *virtualClocks
	tl     *Timeline
	j      *Judged
	trs    []Transition
	log    []string
	pulses [][2]int64 // steady time, REALTIME stamp: not yet observed
}

func newStepRun(t *testing.T, cfg Config) *stepRun {
	v := &virtualClocks{mono: 1 * s, off: T0 - 1*s}
	set := Set{Timeline: NewTimeline(v.read)}
	j, err := set.Add("system", "pps:test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &stepRun{t: t, v: v, tl: set.Timeline, j: j}
}

// run advances the steady clock by d in 200 ms ticks; with samples, a PPS
// pulse at each whole steady second (true seconds: REALTIME was right
// before any step), stamped in REALTIME then and observed 100 ms after it
// (a ring drained by a collector), judged as the pps source judges it:
// offset the stamp's distance to the nearest second, bound that plus a
// 20 us latency.
func (r *stepRun) run(d int64, samples bool) {
	const tick = s / 5
	for end := r.v.mono + d; r.v.mono < end; {
		next := r.v.mono + tick
		if p := next - next%s; samples && p > r.v.mono {
			r.pulses = append(r.pulses, [2]int64{p, p + r.v.off}) // stamped at the pulse
		}
		r.v.mono = next
		for len(r.pulses) > 0 && r.pulses[0][0]+s/10 <= r.v.mono {
			e := r.pulses[0][1]
			r.pulses = r.pulses[1:]
			off := (e%1e9+1.5e9)%1e9 - 0.5e9
			ch := r.j.Observe(Sample{TimeNS: e, Synced: true, OffsetNS: off, BoundNS: Abs(off) + 20_000, FreqErrPPB: -1})
			r.trs = append(r.trs, ch.All()...)
		}
		if tr, ok := r.j.AdvanceTo(r.tl.Now()); ok {
			r.trs = append(r.trs, tr)
		}
	}
}

func (r *stepRun) view() View { return r.j.ViewAt(r.tl.Now()) }

func (r *stepRun) note(when string) {
	v := r.view()
	r.log = append(r.log, fmt.Sprintf("%s: %s bound %d ns", when, v.State, v.BoundNS))
}

// TestRealtimeStepsChangeNoState: a clock judged by PPS edges (samples
// stamped in REALTIME, as the kernel stamps them) stays LOCKED through
// REALTIME steps of −1 h, +1 h and +10 s, edges stamped before the step and
// read after it included; the step is seen by the Timeline with its size.
// Before the judge measured on the steady clock, the +10 s step sent the
// clock LOCKED → HOLDOVER → FREERUN.
func TestRealtimeStepsChangeNoState(t *testing.T) {
	for _, step := range []int64{-3600 * s, 3600 * s, 10 * s} {
		t.Run(fmt.Sprint(step/1e6, "ms"), func(t *testing.T) {
			cfg := Config{ThresholdNS: 100_000, MarginNS: 10_000, HoldoverNS: 60 * s, MinSamples: 4, StaleNS: 3 * s, MinDriftPPB: 5000}
			r := newStepRun(t, cfg)
			r.run(10*s, true)
			if st, _ := r.j.c.State(); st != Locked {
				t.Fatalf("not LOCKED before the step: %v", r.trs)
			}
			n := len(r.trs)
			_, sinceBefore := r.j.c.State()
			r.note("before")
			r.v.off += step
			r.run(30*s, true)
			r.note("after 30 s")
			if got := r.trs[n:]; len(got) != 0 {
				t.Errorf("a %d ns step of REALTIME: transitions %+v", step, got)
			}
			if _, since := r.j.c.State(); since != sinceBefore {
				t.Errorf("since moved from %d to %d", sinceBefore, since)
			}
			steps, count := r.tl.Steps()
			if count != 1 || len(steps) != 1 || steps[0].StepNS != step {
				t.Errorf("steps seen %+v (%d), want one of %d ns", steps, count, step)
			}
			t.Logf("step %+d ms, edges continuing: %v, transitions after it: %d", step/1e6, r.log, len(r.trs)-n)
		})
	}
}

// TestRealtimeStepsWithTheReferenceLost: the edges stop as REALTIME steps;
// the clock loses its reference StaleNS after the last edge and its
// holdover ends HoldoverNS after that, both on the steady clock, its bound
// growing meanwhile. Before: after a 1 h step back a clock without samples
// stayed LOCKED 3,599 s, and a 60 s HOLDOVER lasted 3,660 s with its bound
// stuck.
func TestRealtimeStepsWithTheReferenceLost(t *testing.T) {
	for _, step := range []int64{-3600 * s, 3600 * s, 10 * s} {
		t.Run(fmt.Sprint(step/1e6, "ms"), func(t *testing.T) {
			cfg := Config{ThresholdNS: 10_000_000, HoldoverNS: 60 * s, MinSamples: 1, StaleNS: 3 * s, MinDriftPPB: 5000}
			r := newStepRun(t, cfg)
			r.run(5*s, true)
			r.note("before")
			n := len(r.trs)
			r.v.off += step
			r.run(70*s, false)
			last, _ := r.j.c.Last() // the edge stamped before the step, read after it
			got := r.trs[n:]
			if len(got) != 2 || got[0].To != Holdover || got[0].Reason != ReasonStale || got[1].To != Freerun || got[1].Reason != ReasonHoldoverEnd {
				t.Fatalf("a %d ns step, no edges: %+v; want HOLDOVER (stale) then FREERUN (holdover ended)", step, got)
			}
			// On the steady clock: stale 3 s after the last edge, the
			// holdover over 60 s later, whatever REALTIME did.
			lostMono, endMono := last.MonoNS+3*s, last.MonoNS+63*s
			if r.j.c.lostAt != lostMono {
				t.Errorf("lost at steady %d, want %d", r.j.c.lostAt, lostMono)
			}
			// The bound grew at least at the 5 ppm floor over the holdover.
			if b := r.j.c.Bound(endMono); b < 20_000+63*5000 {
				t.Errorf("bound at the holdover's end %d ns, want ≥ %d", b, 20_000+63*5000)
			}
			if got[1].TimeNS <= got[0].TimeNS {
				t.Errorf("transition times go back: %d then %d", got[0].TimeNS, got[1].TimeNS)
			}
			r.note("70 s after")
			t.Logf("step %+d ms, edges stopped at the step: %v; %s → %s %d s (steady) after the last edge, %s → %s %d s after it, bound then %d ns",
				step/1e6, r.log, got[0].From, got[0].To, (lostMono-last.MonoNS)/s, got[1].From, got[1].To, (endMono-last.MonoNS)/s, r.j.c.Bound(endMono))
		})
	}
}

// TestTimelinePlacesStampsAcrossAStep: stamps from before a step read
// after it keep their steady time, by the offset before the step.
func TestTimelinePlacesStampsAcrossAStep(t *testing.T) {
	for _, step := range []int64{-3600 * s, 10 * s} {
		v := &virtualClocks{mono: 100 * s, off: T0}
		tl := NewTimeline(v.read)
		tl.Now()
		before := v.mono + v.off - s/2 // stamped 0.5 s ago
		v.mono += s / 10
		v.off += step
		after := v.mono + v.off - s/20 // stamped 50 ms ago, after the step
		v.mono += s / 10
		if got := tl.At(before).MonoNS; got != 100*s-s/2 {
			t.Errorf("step %d: a stamp from before placed at %d, want %d", step, got, 100*s-s/2)
		}
		if got := tl.At(after).MonoNS; got != 100*s+s/10-s/20 {
			t.Errorf("step %d: a stamp from after placed at %d, want %d", step, got, 100*s+s/10-s/20)
		}
		if got := tl.At(v.mono + v.off + 5*s).MonoNS; got != v.mono {
			t.Errorf("a stamp in the future placed at %d, want the present %d", got, v.mono)
		}
	}
}

// TestHysteresis: a bound alternating 0.999 / 1.001 ms against a 1 ms
// threshold with a 10 % margin gives at most 2 transitions in 100 samples
// (before: 100), whether the clock starts UNKNOWN or LOCKED.
func TestHysteresis(t *testing.T) {
	for _, locked := range []bool{false, true} {
		c := clock(t, Config{ThresholdNS: 1_000_000, MarginNS: 100_000, HoldoverNS: 300 * s, MinSamples: 1})
		t0 := int64(0)
		if locked {
			c.Observe(good(1*s, 500_000))
			t0 = 1
		}
		n := 0
		for i := int64(0); i < 100; i++ {
			b := int64(999_000)
			if i%2 == 1 {
				b = 1_001_000
			}
			at := (t0 + 1 + i) * s
			ch := c.Observe(Sample{TimeNS: at, MonoNS: at, Synced: true, BoundNS: b, FreqErrPPB: 0})
			n += len(ch.All())
		}
		if n > 2 {
			t.Errorf("from LOCKED %v: %d transitions in 100 samples", locked, n)
		}
		// Below threshold − margin it locks again.
		c.Observe(good(200*s, 900_000))
		if st, _ := c.State(); st != Locked {
			t.Errorf("a bound of 0.9 ms: %v, want LOCKED", st)
		}
	}
}

// TestSinceNeverGoesBack: a late sample (stamped before the last
// transition) that changes the state dates it 1 ns after the last; before,
// it moved since back 1 s.
func TestSinceNeverGoesBack(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 60 * s, MinSamples: 1, StaleNS: 2 * s})
	c.Observe(good(10*s, 100))
	c.Advance(at(13 * s)) // stale at 12 s
	_, before := c.State()
	ch := c.Observe(good(11*s, 100)) // completed late
	_, since := c.State()
	if since < before || len(ch.All()) != 1 || ch.All()[0].TimeNS != since {
		t.Fatalf("since %d after %d, transitions %+v", since, before, ch.All())
	}
}

// TestHoldoverGrowsAtTheFloor: a source reporting 0 frequency error (a
// chronyd on its local reference) still has its bound grow in HOLDOVER, at
// MinDriftPPB; before, it stayed 0.
func TestHoldoverGrowsAtTheFloor(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1_000_000, HoldoverNS: 600 * s, MinSamples: 1, MinDriftPPB: 5000})
	c.Observe(Sample{TimeNS: 1 * s, MonoNS: 1 * s, Synced: true, BoundNS: 0, FreqErrPPB: 0})
	c.Missed(at(2 * s))
	if b := c.Bound(101 * s); b != 100*5000 {
		t.Fatalf("bound 100 s after the last sample: %d ns, want %d", b, 100*5000)
	}
	// And the prediction ends the holdover when it passes the threshold:
	// 1 ms at 5 ppm is 200 s.
	tr, ok := c.Advance(at(300 * s))
	if !ok || tr.Reason != ReasonPredicted || tr.TimeNS != 201*s+1 {
		t.Fatalf("%+v, want FREERUN (predicted) at 201 s", tr)
	}
}

// TestUnsyncedReasonIsKept: a source not synchronised for a reason of its
// own (chronyd on its local reference) says so.
func TestUnsyncedReasonIsKept(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 60 * s, MinSamples: 1})
	ch := c.Observe(Sample{TimeNS: s, MonoNS: s, Synced: false, Unsynced: ReasonLocalReference})
	if tr := ch.All(); len(tr) != 1 || tr[0].To != Freerun || tr[0].Reason != ReasonLocalReference {
		t.Fatalf("%+v", tr)
	}
}

// BenchmarkJudgedObserve is a sample through a Set's Judged on the system
// Timeline: the stamp placed on CLOCK_MONOTONIC (one time.Now), then the
// state machine, under the lock.
func BenchmarkJudgedObserve(b *testing.B) {
	var set Set
	j, _ := set.Add("system", "bench", Config{ThresholdNS: 1000, MarginNS: 100, HoldoverNS: 5 * s, MinSamples: 2, StaleNS: 5 * s})
	now := set.Time().Now().RealNS
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		smp := Sample{TimeNS: now + int64(i), Synced: i%7 != 0, OffsetNS: 50, BoundNS: 100, FreqErrPPB: -1}
		ch := j.Observe(smp)
		_ = ch.All()
	}
}

// A reading interrupted between its two clocks (a preemption: under the
// emulator with CPU hogs beside it a guest saw REALTIME − MONOTONIC move by
// −1.03 ms and back on the next reading) is no step: the Timeline reads
// again and the fresh reading agrees with the old offset. A real step is
// confirmed by the fresh reading and taken at once.
func TestTimelineIgnoresAnInterruptedReading(t *testing.T) {
	mono, off := int64(1e9), int64(1_700_000_000e9)
	jitter := int64(0) // added to the next reading only
	tl := NewTimeline(func() Instant {
		mono += 1e3
		in := Instant{RealNS: mono + off + jitter, MonoNS: mono}
		jitter = 0
		return in
	})
	tl.Now()
	for _, j := range []int64{-1_034_750, 1_034_930, 50e6} {
		jitter = j
		if now := tl.Now(); now.RealNS != now.MonoNS+off {
			t.Errorf("jitter %d ns moved the label: %d, want %d", j, now.RealNS-now.MonoNS, off)
		}
		if steps, n := tl.Steps(); len(steps) != 0 || n != 0 {
			t.Errorf("jitter %d ns taken as a step: %+v", j, steps)
		}
	}
	off += 10e9 // a real step of +10 s
	now := tl.Now()
	steps, n := tl.Steps()
	if len(steps) != 1 || n != 1 || steps[0].StepNS != 10e9 || now.RealNS != now.MonoNS+off {
		t.Errorf("a real step: %+v (%d), label offset %d", steps, n, now.RealNS-now.MonoNS)
	}
}
