package agent

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/phc/phctest"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// resolvePHCs names an interface without a PHC by its key (the selection
// itself is phc.Select's, tested there).
func TestResolvePHCs(t *testing.T) {
	all := []phc.Info{{Index: 0, Device: "/dev/ptp0", Name: "cpts"}}
	discover := func(phc.Paths) ([]phc.Info, error) { return all, nil }
	noPHC := func(string) (int, error) { return -1, nil }
	cfg := Default()
	if got, err := resolvePHCs(&cfg, discover, noPHC); err != nil || !reflect.DeepEqual(got, all) {
		t.Fatalf("all: %v %v", got, err)
	}
	cfg.PHC.Interfaces = []string{"lo"}
	if _, err := resolvePHCs(&cfg, discover, noPHC); err == nil || err.Error() != "config: phc.interfaces[0]: interface lo has no PTP hardware clock" {
		t.Fatalf("interface without PHC: %v", err)
	}
}

// The first open of a PHC is not a reopen; each later one is.
func TestPHCFirstOpenIsNotAReopen(t *testing.T) {
	s := &phcSource{}
	if s.noteOpen() || s.reopens != 0 {
		t.Fatalf("first open counted as a reopen (%d)", s.reopens)
	}
	if !s.noteOpen() || !s.noteOpen() || s.reopens != 2 {
		t.Fatalf("reopens %d after three opens, want 2", s.reopens)
	}
}

// scriptedPHCSource is a phc source measuring the PHC of a scripted machine.
func scriptedPHCSource(p *phctest.Machine, cfg PHCConfig, tr *timebase.Translators) *phcSource {
	s := newPHCSource(cfg, "/dev/ptp3", func(string, int, phc.Method) (phcClock, error) { return p, nil }, p.Read, tr, slog.New(slog.DiscardHandler))
	s.name = "scripted"
	return s
}

// phcCounter is one of a phc source's self-metric counters.
func phcCounter(s *phcSource, key string) uint64 {
	for _, f := range s.SelfFields() {
		if f.Key == key {
			return f.U
		}
	}
	return 0
}

// A PHC stepped while the phc source measures it: forward (37 s, as a grand
// master's TAI-UTC mistake makes it; 5 ms), or back by less than half an
// interval (100 ms) or more (700 ms, 3 s). The reading that reveals the step
// records it (phc_step, at that reading's time, with the step's size and the
// bound it exceeded) and counts it, and the PHC's models start again from
// there: a PHC stamp taken just after any collection is moved to REALTIME
// within its stated uncertainty, or, in the collection that saw the step,
// not at all (the sources count it untranslated). Before, each of these
// steps but the 3 s one fed the model: a stamp after the 37 s step was put
// seconds off, and the stamps of the next 31 collections were off too.
func TestPHCSourceRestartsItsModelAfterAStep(t *testing.T) {
	const at = 20 // the step comes before this collection
	for _, tc := range []struct {
		name string
		step int64
	}{
		{"forward 37 s", 37e9}, {"forward 5 ms", 5e6}, {"back 100 ms", -100e6}, {"back 700 ms", -700e6}, {"back 3 s", -3e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, tr, cfg := phctest.New(), timebase.NewTranslators(), Default().PHC
			s := scriptedPHCSource(p, cfg, tr)
			var untranslated []int
			var steps []record.Record
			worst := int64(0)
			for i := range 2 * cfg.Window {
				if i == at {
					p.PHCNS += tc.step
				}
				b := &collect.Batch{Host: "h"}
				if err := s.Collect(context.Background(), b); err != nil {
					t.Fatalf("collection %d: %v", i, err)
				}
				for _, r := range records(b, "phc_step") {
					steps = append(steps, r)
					for _, o := range records(b, "phc_offset") {
						if o.Tag("clock") == r.Tag("clock") && o.TimeNS != r.TimeNS {
							t.Errorf("phc_step at %d, the reading that revealed it at %d", r.TimeNS, o.TimeNS)
						}
					}
				}
				// A stamp the PHC takes now, moved to REALTIME.
				got, err := tr.Move(timebase.Timestamp{NS: p.PHCNS, Domain: p.Dom}, timebase.DomainRealtime)
				if err != nil {
					untranslated = append(untranslated, i)
					continue
				}
				e := got.NS - p.Now(timebase.DomainRealtime)
				if max(e, -e) > got.UncertaintyNS+100 {
					t.Errorf("collection %d: a stamp moved %d ns off, uncertainty %d ns", i, e, got.UncertaintyNS)
				}
				worst = max(worst, e, -e)
				p.Advance(int64(cfg.Interval))
			}
			t.Logf("worst translation error %d ns; untranslated after collections %v", worst, untranslated)
			if !slices.Equal(untranslated, []int{0, at}) {
				t.Errorf("no model after collections %v; want only the first and the one that saw the step (%d)", untranslated, at)
			}
			if len(steps) != 1 {
				t.Fatalf("%d phc_step records, want 1", len(steps))
			}
			r := steps[0]
			// The bound: the threshold, the slew allowed over an interval and
			// the read windows.
			least := int64(cfg.StepThreshold) + int64(cfg.MaxSlewPPM*float64(cfg.Interval)/1e6)
			got, _ := r.Field("step_ns")
			bound, _ := r.Field("bound_ns")
			t.Logf("phc_step at %d: %v", r.TimeNS, r.Fields)
			if d := got.I - tc.step; max(d, -d) > 10*p.ReadNS || max(got.I, -got.I) <= bound.I || bound.I < least {
				t.Errorf("step_ns %d (bound %d), stepped %d", got.I, bound.I, tc.step)
			}
			if r.Tag("device") != p.Dom.String() || r.Tag("clock_name") != "scripted" {
				t.Errorf("phc_step tags %v", r.Tags)
			}
			if n := phcCounter(s, "steps"); n != 1 {
				t.Errorf("steps %d, want 1", n)
			}
		})
	}
}

// A servo moving the PHC's frequency anywhere within ±500 ppm from one
// reading to the next (by up to twice phc.max_slew_ppm, which the threshold
// absorbs at intervals under 2 s), and REALTIME stepped 5 s under it (the
// clock source's step, which the PHC's readings against REALTIME see too):
// no phc_step.
func TestPHCSourceTakesNoSlewOrRealtimeStepForAStep(t *testing.T) {
	p, cfg := phctest.New(), Default().PHC
	cfg.Interval = 1500 * time.Millisecond
	s := scriptedPHCSource(p, cfg, timebase.NewTranslators())
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		if i == 50 {
			p.RealtimeOffsetNS += 5e9
		}
		b := &collect.Batch{Host: "h"}
		if err := s.Collect(context.Background(), b); err != nil {
			t.Fatalf("collection %d: %v", i, err)
		}
		if r := records(b, "phc_step"); len(r) > 0 {
			t.Fatalf("collection %d at %.0f ppb: %v", i, p.RatePPB, r[0].Fields)
		}
		p.RatePPB = cfg.MaxSlewPPM * 1000 * (2*rng.Float64() - 1)
		p.Advance(int64(cfg.Interval))
	}
	if n := phcCounter(s, "steps"); n != 0 {
		t.Errorf("steps %d", n)
	}
}

// failingPHC fails its readings against one clock once told to.
type failingPHC struct {
	*phctest.Machine
	against timebase.Domain
	err     error
}

func (f *failingPHC) Sample(sys timebase.Domain, r *phc.Reading) error {
	if sys == f.against && f.err != nil {
		return f.err
	}
	return f.Machine.Sample(sys, r)
}

// The reading against REALTIME reveals a step and the next one, against
// MONOTONIC_RAW, fails (the device went away): the step is recorded and the
// models restart all the same. Before, the collection ended at the error:
// the step was neither recorded nor counted and, the device reopened, the
// post-step readings fed the pre-step models.
func TestPHCSourceKeepsAStepSeenBeforeAFailedReading(t *testing.T) {
	m, tr, cfg := phctest.New(), timebase.NewTranslators(), Default().PHC
	p := &failingPHC{Machine: m, against: timebase.DomainMonotonicRaw}
	s := newPHCSource(cfg, "/dev/ptp3", func(string, int, phc.Method) (phcClock, error) { return p, nil }, m.Read, tr, slog.New(slog.DiscardHandler))
	collect := func(i int) (*collect.Batch, error) {
		b := &collect.Batch{Host: "h"}
		err := s.Collect(context.Background(), b)
		m.Advance(int64(cfg.Interval))
		return b, err
	}
	for i := range 5 {
		if _, err := collect(i); err != nil {
			t.Fatal(err)
		}
	}
	m.PHCNS += 37e9
	p.err = errors.New("input/output error")
	b, err := collect(5)
	if !errors.Is(err, p.err) || len(records(b, "phc_step")) != 1 || phcCounter(s, "steps") != 1 {
		t.Fatalf("collection with the failure: %v, %d phc_step records, steps %d; want the error and the step", err, len(records(b, "phc_step")), phcCounter(s, "steps"))
	}
	p.err = nil
	translated := 0
	for i := 6; i < 10; i++ {
		if _, err := collect(i); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Move(timebase.Timestamp{NS: m.PHCNS, Domain: m.Dom}, timebase.DomainRealtime)
		if err != nil {
			continue // the models restart
		}
		translated++
		if e := got.NS - m.Now(timebase.DomainRealtime); max(e, -e) > got.UncertaintyNS+100 {
			t.Errorf("collection %d: a stamp moved %d ns off, uncertainty %d ns", i, e, got.UncertaintyNS)
		}
	}
	if translated == 0 {
		t.Error("no model of the PHC 4 collections after the step")
	}
}
