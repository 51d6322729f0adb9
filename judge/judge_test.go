package judge

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

const s = int64(1e9)

func clock(t *testing.T, cfg Config) *Clock {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func good(at, bound int64) Sample {
	return Sample{TimeNS: at, MonoNS: at, Synced: true, OffsetNS: bound / 2, BoundNS: bound, FreqErrPPB: 0}
}

// step is one input of a scenario and the transitions it must cause.
type step struct {
	sample  *Sample
	missed  int64 // a deadline, when sample is nil and missed > 0
	advance int64 // a time, when both are unset
	want    []Transition
}

func run(t *testing.T, c *Clock, steps []step) {
	t.Helper()
	for i, st := range steps {
		var got []Transition
		switch {
		case st.sample != nil:
			ch := c.Observe(*st.sample)
			got = ch.All()
		case st.missed > 0:
			ch := c.Missed(at(st.missed))
			got = ch.All()
		default:
			if tr, ok := c.Advance(at(st.advance)); ok {
				got = []Transition{tr}
			}
		}
		if len(got) != len(st.want) {
			t.Fatalf("step %d: %+v, want %+v", i, got, st.want)
		}
		for j := range got {
			g, w := got[j], st.want[j]
			if g.TimeNS != w.TimeNS || g.From != w.From || g.To != w.To || g.Reason != w.Reason {
				t.Fatalf("step %d: %+v, want %+v", i, g, w)
			}
		}
	}
}

func ptr(s Sample) *Sample { return &s }

// at is t on both clocks (no step).
func at(t int64) Instant { return Instant{RealNS: t, MonoNS: t} }

func TestLockAfterMinSamplesThenHoldoverThenFreerun(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 3})
	run(t, c, []step{
		{sample: ptr(good(1*s, 100))},
		{sample: ptr(good(2*s, 900))},
		{sample: ptr(good(3*s, 100)), want: []Transition{{TimeNS: 3 * s, From: Unknown, To: Locked, Reason: ReasonLocked}}},
		{sample: ptr(Sample{TimeNS: 4 * s, MonoNS: 4 * s, BoundNS: 50}), want: []Transition{{TimeNS: 4 * s, From: Locked, To: Holdover, Reason: ReasonUnsynced}}},
		{advance: 8 * s},
		// The holdover ended at 9 s, whenever it is looked at.
		{advance: 20 * s, want: []Transition{{TimeNS: 9 * s, From: Holdover, To: Freerun, Reason: ReasonHoldoverEnd}}},
		{sample: ptr(good(21*s, 10))},
		{sample: ptr(good(22*s, 10))},
		{sample: ptr(good(23*s, 10)), want: []Transition{{TimeNS: 23 * s, From: Freerun, To: Locked, Reason: ReasonLocked}}},
	})
	if st, since := c.State(); st != Locked || since != 23*s {
		t.Fatalf("state %v since %d", st, since)
	}
}

func TestFirstBadSampleIsFreerunAndOverBoundLeavesLocked(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 1})
	run(t, c, []step{
		{sample: ptr(good(1*s, 5000)), want: []Transition{{TimeNS: 1 * s, From: Unknown, To: Freerun, Reason: ReasonOverBound}}},
		{sample: ptr(good(2*s, 500)), want: []Transition{{TimeNS: 2 * s, From: Freerun, To: Locked, Reason: ReasonLocked}}},
		// Measured, over the threshold, but it could be within it (offset
		// 500 of a bound 1001): unconfirmed, not shown bad: HOLDOVER.
		{sample: ptr(good(3*s, 1001)), want: []Transition{{TimeNS: 3 * s, From: Locked, To: Holdover, Reason: ReasonOverBound}}},
		{sample: ptr(good(4*s, 400)), want: []Transition{{TimeNS: 4 * s, From: Holdover, To: Locked, Reason: ReasonLocked}}},
		// Shown bad: even the least error the sample allows (3000 − 100)
		// is over the threshold.
		{sample: ptr(Sample{TimeNS: 5 * s, MonoNS: 5 * s, Synced: true, OffsetNS: -3000, BoundNS: 3100}), want: []Transition{{TimeNS: 5 * s, From: Locked, To: Freerun, Reason: ReasonOffset}}},
		{sample: ptr(Sample{TimeNS: 6 * s, MonoNS: 6 * s, Synced: true, OffsetNS: -3000, BoundNS: 3100})},
	})
	// From HOLDOVER too.
	c = clock(t, Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 1})
	run(t, c, []step{
		{sample: ptr(good(1*s, 500)), want: []Transition{{TimeNS: 1 * s, From: Unknown, To: Locked, Reason: ReasonLocked}}},
		{missed: 2 * s, want: []Transition{{TimeNS: 2 * s, From: Locked, To: Holdover, Reason: ReasonLost}}},
		{sample: ptr(good(3*s, 1500))}, // unconfirmed: still holding over
		{sample: ptr(Sample{TimeNS: 4 * s, MonoNS: 4 * s, Synced: true, OffsetNS: 2000, BoundNS: 2100}), want: []Transition{{TimeNS: 4 * s, From: Holdover, To: Freerun, Reason: ReasonOffset}}},
	})
}

func TestPredictedBoundEndsHoldoverEarly(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1100, HoldoverNS: 5 * s, MinSamples: 1})
	smp := good(10*s, 100)
	smp.FreqErrPPB = 1000 // 1 µs/s: 1,000 ns of room last 1 s
	run(t, c, []step{
		{sample: &smp, want: []Transition{{TimeNS: 10 * s, From: Unknown, To: Locked, Reason: ReasonLocked}}},
		{missed: 10*s + s/2, want: []Transition{{TimeNS: 10*s + s/2, From: Locked, To: Holdover, Reason: ReasonLost}}},
		{advance: 12 * s, want: []Transition{{TimeNS: 11*s + 1, From: Holdover, To: Freerun, Reason: ReasonPredicted}}},
	})
	if b := c.Bound(11 * s); b != 1100 {
		t.Errorf("predicted bound at 11 s: %d, want 1100", b)
	}
	// Lost with the prediction already over: straight to FREERUN.
	c = clock(t, Config{ThresholdNS: 1100, HoldoverNS: 5 * s, MinSamples: 1})
	run(t, c, []step{
		{sample: &smp, want: []Transition{{TimeNS: 10 * s, From: Unknown, To: Locked, Reason: ReasonLocked}}},
		{missed: 12 * s, want: []Transition{{TimeNS: 12 * s, From: Locked, To: Freerun, Reason: ReasonPredicted}}},
	})
}

func TestStaleSourceLosesItsReferenceWhenItWentStale(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 1, StaleNS: 2 * s})
	run(t, c, []step{
		{sample: ptr(good(10*s, 100)), want: []Transition{{TimeNS: 10 * s, From: Unknown, To: Locked, Reason: ReasonLocked}}},
		{advance: 12 * s},
		{advance: 15 * s, want: []Transition{{TimeNS: 12 * s, From: Locked, To: Holdover, Reason: ReasonStale}}},
		// A good sample after the holdover's end: the end first, at 17 s,
		// then the sample's own transition.
		{sample: ptr(good(18*s, 100)), want: []Transition{
			{TimeNS: 17 * s, From: Holdover, To: Freerun, Reason: ReasonHoldoverEnd},
			{TimeNS: 18 * s, From: Freerun, To: Locked, Reason: ReasonLocked}}},
	})
}

func TestHoldoverRecoversAndUnknownMissed(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 2})
	run(t, c, []step{
		{missed: 1 * s, want: []Transition{{TimeNS: 1 * s, From: Unknown, To: Freerun, Reason: ReasonLost}}},
		{sample: ptr(good(2*s, 10))},
		{sample: ptr(good(3*s, 10)), want: []Transition{{TimeNS: 3 * s, From: Freerun, To: Locked, Reason: ReasonLocked}}},
		{missed: 4 * s, want: []Transition{{TimeNS: 4 * s, From: Locked, To: Holdover, Reason: ReasonLost}}},
		{sample: ptr(Sample{TimeNS: 5 * s, MonoNS: 5 * s})}, // still unsynchronised: holds over
		{sample: ptr(good(6*s, 10))},
		{sample: ptr(good(7*s, 10)), want: []Transition{{TimeNS: 7 * s, From: Holdover, To: Locked, Reason: ReasonLocked}}},
	})
}

// TestDriftEstimateWhenTheSourceGivesNone: without a frequency error from
// the source, the prediction grows at the drift of the offsets, with their
// bounds' share.
func TestDriftEstimateWhenTheSourceGivesNone(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 100_000, HoldoverNS: 100 * s, MinSamples: 1})
	for i := int64(0); i <= 10; i++ {
		c.Observe(Sample{TimeNS: i * s, MonoNS: i * s, Synced: true, OffsetNS: 1000 * i, BoundNS: 10, FreqErrPPB: -1})
	}
	c.Missed(at(10 * s))
	// 10,000 ns in 10 s, plus (10 + 10) ns: 1,002 ppb.
	if got, want := c.Bound(20*s), int64(10+10*1002); got != want {
		t.Fatalf("bound 10 s into holdover: %d, want %d", got, want)
	}
}

func TestConfigAndStateNames(t *testing.T) {
	for _, cfg := range []Config{{HoldoverNS: 1, MinSamples: 1}, {ThresholdNS: 1, MinSamples: 1}, {ThresholdNS: 1, HoldoverNS: 1}, {ThresholdNS: 1, HoldoverNS: 1, MinSamples: 1, StaleNS: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	for i, want := range []string{"UNKNOWN", "LOCKED", "HOLDOVER", "FREERUN"} {
		if got := States[i].String(); got != want {
			t.Errorf("state %d: %s, want %s", i, got, want)
		}
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	c := clock(t, Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 2, StaleNS: s})
	i := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		i++
		smp := good(i*s, 100)
		smp.Synced = i%7 != 0
		ch := c.Observe(smp)
		_ = ch.All()
		c.Advance(at(i*s + s/2))
	}); n != 0 {
		t.Fatalf("%v allocations per sample", n)
	}
}

func TestBoundFormulas(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"daemon", Daemon(-300, 1000, 200), 300 + 200 + 500},
		{"exchange", Exchange(100, 51, 1000, 30, 7), 100 + 26 + 500 + 30 + 7},
		{"path delay", PathDelay(-40, 1000, 16), 40 + 1000 + 16},
		{"reading", Reading(-5, 3), 5 + 2},
		{"negative parts count 0", Daemon(0, -5, -5), 0},
		{"saturates", Sum(math.MaxInt64, 1), math.MaxInt64},
		{"abs min", Abs(math.MinInt64), math.MaxInt64},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestExchangeBoundCoversTheTruth: whatever the asymmetry, the offset
// measured by a two-way exchange with a perfect server is off the true
// offset by at most half the round trip, so Exchange covers |true offset|
// in every case (not 99 %: all of them).
func TestExchangeBoundCoversTheTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100_000; i++ {
		theta := r.Int64N(2_000_000) - 1_000_000 // our clock − true, ns
		d1, d2 := r.Int64N(500_000), r.Int64N(500_000)
		t1 := r.Int64N(1 << 40)
		t2 := t1 - theta + d1 // the server's (true) stamps
		t3 := t2 + r.Int64N(10_000)
		t4 := t3 + theta + d2
		off := ((t2 - t1) + (t3 - t4)) / 2 // server − us
		delay := (t4 - t1) - (t3 - t2)
		if b := Exchange(off, delay, 0, 0, 1); Abs(theta) > b {
			t.Fatalf("θ %d, measured %d, delay %d: bound %d does not cover it", theta, -off, delay, b)
		}
	}
}

func BenchmarkObserve(b *testing.B) {
	c, _ := New(Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 2, StaleNS: s})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		smp := good(int64(i)*s, 100)
		smp.Synced = i%7 != 0
		ch := c.Observe(smp)
		_ = ch.All()
	}
}

func TestSetViewsAndTwice(t *testing.T) {
	var set Set
	cfg := Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 1}
	b, err := set.Add("system", "ntp:b", cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := set.Add("system", "ntp:a", cfg)
	if _, err := set.Add("system", "ntp:a", cfg); err == nil {
		t.Fatal("a clock judged twice accepted")
	}
	if _, err := set.Add("x", "y", Config{}); err == nil || !strings.Contains(err.Error(), "judge x (y): threshold") {
		t.Fatalf("bad config: %v", err)
	}
	a.Observe(good(10*s, 100))
	b.Missed(11 * s)
	v := set.Views(12*s, nil)
	if len(v) != 2 || v[0].Source != "ntp:a" || v[0].State != Locked || v[0].SinceNS != 10*s || v[0].LastSampleNS != 10*s || v[0].BoundNS != 100 || v[0].Changes != 1 ||
		v[1].State != Freerun || v[1].LastSampleNS != 0 {
		t.Fatalf("views %+v", v)
	}
}

// TestFilteredDelayBoundCoversTheTruth: a slave's offset taken with a
// filtered path delay, any asymmetry, any filter error: the bound covers
// the true offset every time.
func TestFilteredDelayBoundCoversTheTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100_000; i++ {
		theta := r.Int64N(200_000) - 100_000 // slave − master
		d1, d2 := r.Int64N(50_000), r.Int64N(50_000)
		t1 := r.Int64N(1 << 40)
		t2 := t1 + d1 + theta
		t3 := t2 + r.Int64N(1_000_000)
		t4 := t3 - theta + d2
		pair := ((t2 - t1) + (t4 - t3)) / 2
		filtered := pair + r.Int64N(20_000) - 10_000 // a filter lagging or leading
		off := t2 - t1 - filtered
		if b := FilteredDelay(off, filtered, pair); Abs(theta) > b+1 {
			t.Fatalf("θ %d, offset %d, filtered %d, pair %d: bound %d", theta, off, filtered, pair, b)
		}
	}
}

// TestDueIsWhenAdvanceTransitions: Due names the first steady time at which
// Advance makes a transition (a clock going stale, a holdover ending, a
// predicted crossing): nothing at Due − 1 ns, the transition at Due; and
// none where time alone changes nothing.
func TestDueIsWhenAdvanceTransitions(t *testing.T) {
	smp := good(10*s, 100)
	pred := smp
	pred.FreqErrPPB = 1000
	for _, c := range []struct {
		name string
		cfg  Config
		smp  Sample
		lose bool // a missed sample at 10.5 s
		want int64
	}{
		{"stale", Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 1, StaleNS: 2 * s}, smp, false, 12*s + 1},
		{"holdover end", Config{ThresholdNS: 1000, HoldoverNS: 5 * s, MinSamples: 1}, smp, true, 15*s + s/2},
		{"predicted", Config{ThresholdNS: 1100, HoldoverNS: 5 * s, MinSamples: 1}, pred, true, 11*s + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := clock(t, c.cfg)
			if _, ok := k.Due(); ok {
				t.Fatal("an UNKNOWN clock is due")
			}
			k.Observe(c.smp)
			if c.lose {
				k.Missed(at(10*s + s/2))
			}
			due, ok := k.Due()
			if !ok || due != c.want {
				t.Fatalf("due %d %v, want %d", due, ok, c.want)
			}
			if tr, ok := k.Advance(at(due - 1)); ok {
				t.Fatalf("a transition before due: %+v", tr)
			}
			if _, ok := k.Advance(at(due)); !ok {
				t.Fatal("no transition at due")
			}
		})
	}
	// LOCKED without a staleness limit, and FREERUN: only a sample changes them.
	k := clock(t, Config{ThresholdNS: 1000, HoldoverNS: s, MinSamples: 1})
	k.Observe(smp)
	if _, ok := k.Due(); ok {
		t.Fatal("a LOCKED clock without StaleNS is due")
	}
	k.Missed(at(11 * s))
	k.Advance(at(20 * s))
	if _, ok := k.Due(); ok || k.state != Freerun {
		t.Fatalf("a %v clock is due", k.state)
	}
}

// TestHoldoverStandsOnTheLastGoodSample: a sample over the threshold that
// cannot show the clock bad (a delayed exchange: offset 37 ms, bound
// 77 ms, against 20 ms) sends LOCKED to HOLDOVER with the bound predicted
// from the last good sample; the offset shown with it, in the transition
// and the view, is that sample's too, so |offset| ≤ bound. Before, the
// view paired the delayed sample's 37 ms with the predicted 3 ms bound.
func TestHoldoverStandsOnTheLastGoodSample(t *testing.T) {
	var set Set
	j, err := set.Add("system", "ntp:x", Config{ThresholdNS: 20e6, HoldoverNS: 60 * s, MinSamples: 1, MinDriftPPB: 5000})
	if err != nil {
		t.Fatal(err)
	}
	j.Observe(Sample{TimeNS: 1 * s, MonoNS: 1 * s, Synced: true, OffsetNS: -2_970_000, BoundNS: 3_020_000, FreqErrPPB: -1})
	ch := j.Observe(Sample{TimeNS: 2 * s, MonoNS: 2 * s, Synced: true, OffsetNS: 37_000_000, BoundNS: 77_000_000, FreqErrPPB: -1})
	tr := ch.All()
	if len(tr) != 1 || tr[0].To != Holdover || tr[0].OffsetNS != -2_970_000 || tr[0].BoundNS < Abs(tr[0].OffsetNS) {
		t.Fatalf("transitions %+v: want HOLDOVER at the last good offset, its bound at least |offset|", tr)
	}
	v := j.ViewAt(Instant{RealNS: 3 * s, MonoNS: 3 * s})
	if v.State != Holdover || v.OffsetNS != -2_970_000 || v.BoundNS < Abs(v.OffsetNS) || v.LastSampleNS != 2*s {
		t.Fatalf("view %+v: want HOLDOVER at the last good offset, bound ≥ |offset|, the last sample's time", v)
	}
}
