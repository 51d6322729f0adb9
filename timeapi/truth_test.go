package timeapi

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// The coverage-against-truth harness: simulated time on a MONOTONIC_RAW the
// test advances, a true clock that drifts and wanders against it
// (timebase.VirtualClock), a system clock (REALTIME) 3 ms off that steps, a
// MONOTONIC slewed 100 ppm, and a simulated agent that measures the truth
// with bounded noise once a second and publishes what an agent would: LOCKED,
// a lost reference (HOLDOVER, a growing bound), FREERUN (void), a restart
// of the writer under an open reader, a stall (no publish: the bound grows,
// then void) and two REALTIME steps. Every 10 ms the reader asks Now and Past
// (REALTIME, MONOTONIC and MONOTONIC_RAW stamps up to 3 s old); every answer
// must contain the truth.

const (
	simStep      = 10_000_000     // ns of simulated time between reads
	simSample    = 1_000_000_000  // between the agent's samples
	simNoise     = 40_000         // the measurement's error is within ±simNoise
	simBound     = 50_000         // the bound the agent publishes at a sample
	simGrowthPPB = 1_000          // the wander's allowance (the fit's error comes on top)
	simVoidAfter = 5_000_000_000  // an unrefreshed section is void this long after its base
	simHoldover  = 60_000_000_000 // HOLDOVER lasts this long, then FREERUN
	simEpoch     = 1_700_000_000e9
)

// simPhase is a span of simulated seconds and what the agent does in it.
type simPhase struct {
	name     string
	until    int64 // simulated seconds since the start
	ref      bool  // the agent has its reference
	publish  bool  // the agent publishes
	restart  bool  // the writer is closed and created again at the phase's start
	wantVoid bool  // reads must fail with ErrVoid at some point of the phase
}

type simTally struct {
	answered, covered int64
	refused           map[error]int64
	half, err         []int64
}

type simClock struct {
	raw *setClock
	at  func(int64) int64
}

func (c simClock) Now() (int64, error)     { return c.at(c.raw.ns.Load()), nil }
func (c simClock) Domain() timebase.Domain { return timebase.DomainRealtime }

func TestCoverageAgainstTruth(t *testing.T) {
	raw := newSetClock(1_000e9)
	truth, err := timebase.NewVirtualClock(raw, timebase.VirtualConfig{
		Domain: timebase.DomainRealtime, OffsetNS: simEpoch, SkewPPM: 12.5, WanderPPMPerSqrtS: 0.01, Seed: 36})
	if err != nil {
		t.Fatal(err)
	}
	start := raw.ns.Load()
	stepUp, stepDown := start+200e9, start+380e9 // REALTIME +1 s, then −0.5 s
	realtimeAt := func(b int64) int64 {
		rt := truth.At(b) - 3e6 + (b-start)/50_000 // 3 ms behind, 20 ppm fast
		if b >= stepUp {
			rt += 1e9
		}
		if b >= stepDown {
			rt -= 5e8
		}
		return rt
	}
	monoAt := func(b int64) int64 { return b + (b-start)/10_000 } // slewed 100 ppm
	rtClock, monoClock := simClock{&raw, realtimeAt}, simClock{&raw, monoAt}

	phases := []simPhase{
		{name: "locked", until: 120, ref: true, publish: true},
		{name: "holdover", until: 180, publish: true},
		{name: "freerun", until: 200, publish: true, wantVoid: true},
		{name: "relocked", until: 260, ref: true, publish: true},
		{name: "restart", until: 320, ref: true, publish: true, restart: true},
		{name: "stall", until: 340, ref: true, wantVoid: true},
		{name: "steps", until: 440, ref: true, publish: true},
	}
	path := filepath.Join(t.TempDir(), "time.shm")
	w, err := Create(path, 0o644, []string{"system"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.Close() }()
	r := openWith(t, path, raw, rtClock, monoClock)
	rng := rand.New(rand.NewPCG(36, 1))

	// The simulated agent: a sample is the truth ± simNoise; the rate is the
	// slope over the last 20 samples; between samples, and without a
	// reference, the last model is carried forward with its growing bound.
	type sample struct{ base, meas int64 }
	var hist []sample
	var model Model
	var lostAt int64
	publish := func(b int64, ph simPhase) {
		switch {
		case ph.ref:
			meas := truth.At(b) + rng.Int64N(2*simNoise+1) - simNoise
			hist = append(hist, sample{b, meas})
			if len(hist) > 20 {
				hist = hist[1:]
			}
			// The rate's error is at most 2·simNoise over the fit's span; the
			// growth allows that and the wander. Before two samples, no rate.
			rate, growth := int64(0), int64(simGrowthPPB+100_000)
			if o := hist[0]; b > o.base {
				rate = ((meas - o.meas) - (b - o.base)) * 1e9 / (b - o.base)
				growth = simGrowthPPB + 2*simNoise*1e9/(b-o.base)
			}
			model = Model{State: Locked, BaseNS: b, TrueNS: meas, RatePPB: rate, BoundNS: simBound, GrowthPPB: growth}
			lostAt = 0
		case model.State == Unknown:
			return
		default:
			iv, _ := model.at(b, 0)
			model.TrueNS = iv.EarliestNS/2 + iv.LatestNS/2
			model.BoundNS = (iv.LatestNS - iv.EarliestNS + 1) / 2
			model.BaseNS = b
			if lostAt == 0 {
				lostAt = b
			}
			model.State = Holdover
			if b-lostAt >= simHoldover {
				model.State = Freerun
			}
		}
		model.VoidNS = b + simVoidAfter
		if model.State == Freerun {
			model.VoidNS = b // FREERUN: void at once
		}
		model.RealtimeNS = realtimeAt(b)
		w.Publish(0, model)
	}

	tally := map[string]*simTally{}
	var stampAges = [...]int64{0, 1e6, 300e6, 3e9}
	for _, ph := range phases {
		tl := &simTally{refused: map[error]int64{}}
		tally[ph.name] = tl
		if ph.restart {
			w.Close()
			if w, err = Create(path, 0o644, []string{"system"}); err != nil {
				t.Fatal(err)
			}
			hist = hist[:0]
			model = Model{}
		}
		for b := raw.ns.Load(); b < start+ph.until*1e9; b += simStep {
			raw.ns.Store(b)
			if ph.publish && (b-start)%simSample == 0 {
				publish(b, ph)
			}
			check := func(stampRaw int64, iv Interval, err error) {
				if err != nil {
					tl.refused[err]++
					return
				}
				tl.answered++
				tr := truth.At(stampRaw)
				if iv.EarliestNS <= tr && tr <= iv.LatestNS {
					tl.covered++
				} else if tl.answered-tl.covered <= 5 {
					t.Errorf("%s at %.2f s: [%d, %d] misses the truth %d by %d ns", ph.name,
						float64(b-start)/1e9, iv.EarliestNS-tr, iv.LatestNS-tr, tr, max(iv.EarliestNS-tr, tr-iv.LatestNS))
				}
				tl.half = append(tl.half, (iv.LatestNS-iv.EarliestNS)/2)
				e := (iv.EarliestNS/2 + iv.LatestNS/2) - tr
				tl.err = append(tl.err, max(e, -e))
			}
			iv, err := r.Now("system")
			if err == nil && model.State != Unknown && b >= model.VoidNS {
				t.Fatalf("%s at %.2f s: Now answered %+v after the section's void time", ph.name, float64(b-start)/1e9, iv)
			}
			check(b, iv, err)
			age := stampAges[(b/simStep)%int64(len(stampAges))]
			s := b - age
			iv, err = r.Past("system", Realtime, realtimeAt(s))
			check(s, iv, err)
			iv, err = r.Past("system", Monotonic, monoAt(s))
			check(s, iv, err)
			iv, err = r.Past("system", MonotonicRaw, s)
			check(s, iv, err)
		}
	}
	var answered, covered int64
	for _, ph := range phases {
		tl := tally[ph.name]
		answered += tl.answered
		covered += tl.covered
		for e := range tl.refused {
			if !errors.Is(e, ErrVoid) && !errors.Is(e, ErrNotInitialised) && !errors.Is(e, ErrStepped) {
				t.Errorf("%s: %d reads failed with %v", ph.name, tl.refused[e], e)
			}
		}
		if tl.answered == 0 {
			t.Errorf("%s: no read answered", ph.name)
		}
		if ph.wantVoid && tl.refused[ErrVoid] == 0 {
			t.Errorf("%s: no read found the section void", ph.name)
		}
		slices.Sort(tl.half)
		slices.Sort(tl.err)
		medHalf, medErr := tl.half[len(tl.half)/2], tl.err[len(tl.err)/2]
		t.Logf("%-8s %6d answered, %6d covered (%.4f %%), refused %v; median half-width %d ns, median |error| %d ns, tightness %.1f",
			ph.name, tl.answered, tl.covered, 100*float64(tl.covered)/float64(tl.answered), tl.refused,
			medHalf, medErr, float64(medHalf)/float64(max(medErr, 1)))
	}
	if tally["steps"].refused[ErrStepped] == 0 {
		t.Error("steps: no REALTIME stamp was refused across a step: the steps were not exercised")
	}
	frac := float64(covered) / float64(answered)
	t.Logf("all: %d of %d reads covered the truth (%.4f %%)", covered, answered, 100*frac)
	if frac < 0.9999 {
		t.Fatalf("coverage %.4f %% < 99.99 %%", 100*frac)
	}
}
