package phc_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/phc/phctest"
	"github.com/monagent/monagent/timebase"
)

// detector is a StepDetector with the phc section's defaults (1 ms, 500 ppm).
func detector() phc.StepDetector {
	return phc.StepDetector{ThresholdNS: int64(time.Millisecond), MaxSlewPPB: 500_000}
}

// judge reads the machine's PHC against MONOTONIC_RAW and judges the reading.
func judge(t *testing.T, m *phctest.Machine, d *phc.StepDetector) phc.Judgement {
	t.Helper()
	var r phc.Reading
	if err := m.Sample(timebase.DomainMonotonicRaw, &r); err != nil {
		t.Fatal(err)
	}
	return d.Judge(r.SysNS, r.PHCNS, r.DelayNS)
}

// Steps forward and back, of 37 s down to twice the bound, at phc2sys's
// rate, phc.interval's default and a slow one: the reading after each is
// the one step found, its size within the read windows of the step, and no
// other reading is one. A jump of half the bound is not a step.
func TestStepDetectorFindsSteps(t *testing.T) {
	for _, interval := range []time.Duration{83 * time.Millisecond, time.Second, 10 * time.Second} {
		d0 := detector()
		least := d0.ThresholdNS + d0.MaxSlewPPB*int64(interval)/1e9
		for _, step := range []int64{37e9, 5e6, 2 * least, -2 * least, -100e6, -700e6, -3e9, least / 2, -least / 2} {
			size := max(step, -step)
			if size > least/2 && size < 2*least {
				continue // near the bound: either verdict is right
			}
			m, d := phctest.New(), detector()
			found := 0
			for i := range 40 {
				if i == 20 {
					m.PHCNS += step
				}
				j := judge(t, m, &d)
				want := phc.VerdictAdvancing
				switch {
				case i == 0:
					want = phc.VerdictFirst
				case i == 20 && size >= 2*least:
					want = phc.VerdictStepped
				}
				if j.Verdict != want {
					t.Errorf("every %v, step %d ns: reading %d %v (%+v), want %v", interval, step, i, j.Verdict, j, want)
				}
				if j.Verdict == phc.VerdictStepped {
					found++
					if e := j.StepNS - step; max(e, -e) > 4*m.ReadNS || j.PHCAfterNS-j.PHCBeforeNS != j.AdvanceNS || j.StepNS != j.AdvanceNS-j.PredictedNS {
						t.Errorf("every %v: stepped %d ns, measured %+v", interval, step, j)
					}
				}
				m.Advance(int64(interval))
			}
			if found > 1 {
				t.Errorf("every %v, step %d ns: %d steps found", interval, step, found)
			}
		}
	}
}

// A servo (ptp4l, phc2sys) slewing the PHC: its rate moves to a new value
// within ±500 ppm at every reading, by up to max_slew_ppm (500 ppm) from the
// last, or swings from end to end (1000 ppm, twice the allowed slew, which
// the threshold absorbs at intervals under 2 s). Not one reading is a step.
// The worst reading's share of its bound is logged.
func TestStepDetectorIgnoresAServo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		swing    bool
	}{
		{"random slew 83ms", 83 * time.Millisecond, false},
		{"random slew 1s", time.Second, false},
		{"random slew 10s", 10 * time.Second, false},
		{"full swing 83ms", 83 * time.Millisecond, true},
		{"full swing 1s", time.Second, true},
		{"full swing 1.5s", 1500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, d := phctest.New(), detector()
			rng := rand.New(rand.NewPCG(4711, uint64(tc.interval)))
			worst := 0.0
			for i := range 2000 {
				j := judge(t, m, &d)
				if i > 0 && j.Verdict != phc.VerdictAdvancing {
					t.Fatalf("reading %d at %.0f ppb: %v %+v", i, m.RatePPB, j.Verdict, j)
				}
				if i > 1 {
					worst = max(worst, float64(max(j.StepNS, -j.StepNS))/float64(j.BoundNS))
				}
				if tc.swing {
					m.RatePPB = 500_000 * float64(1-2*(i%2))
				} else {
					m.RatePPB = max(-500_000, min(500_000, m.RatePPB+float64(d.MaxSlewPPB)*(2*rng.Float64()-1)))
				}
				m.Advance(int64(tc.interval))
			}
			t.Logf("worst reading at %.2f of its bound", worst)
		})
	}
}

// QEMU's e1000e never advances its clock: every reading after the first is
// stopped (ErrNotAdvancing). Set 37 s ahead, it has stepped by that less the
// interval a running clock would have advanced (its rate is forgotten);
// started, it runs on without a step.
func TestStepDetectorStoppedPHC(t *testing.T) {
	m, d := phctest.New(), detector()
	m.RatePPB = -1e9
	const interval = 200 * time.Millisecond
	for i, want := range []phc.Verdict{phc.VerdictFirst, phc.VerdictStopped, phc.VerdictStopped, phc.VerdictStepped, phc.VerdictStopped, phc.VerdictAdvancing, phc.VerdictAdvancing} {
		if i == 3 {
			m.PHCNS += 37e9
		}
		j := judge(t, m, &d)
		if j.Verdict != want {
			t.Fatalf("reading %d: %v %+v, want %v", i, j.Verdict, j, want)
		}
		if err := j.Err(timebase.DomainMonotonicRaw); errors.Is(err, phc.ErrNotAdvancing) != (want == phc.VerdictStopped) {
			t.Errorf("reading %d: %v: %v", i, want, err)
		}
		if want == phc.VerdictStepped && (j.AdvanceNS != 37e9 || j.PredictedNS != j.ElapsedNS) {
			t.Errorf("set ahead 37 s: %+v", j)
		}
		if i == 4 {
			m.RatePPB = 0
		}
		m.Advance(int64(interval))
	}
	d.Forget()
	if j := judge(t, m, &d); j.Verdict != phc.VerdictFirst {
		t.Errorf("after Forget: %v", j.Verdict)
	}
}
