package phc_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/phc/phctest"
	"github.com/monagent/monagent/timebase"
)

// tracker follows the machine's PHC against REALTIME and MONOTONIC_RAW with
// the phc section's defaults.
func tracker(m *phctest.Machine, tr *timebase.Translators) *phc.Tracker {
	return phc.NewTracker(phc.TrackerConfig{
		Path: "/dev/ptp3", Against: []timebase.Domain{timebase.DomainRealtime, timebase.DomainMonotonicRaw},
		Detector: detector(), Window: 32, Read: m.Read, Translators: tr,
	})
}

// collect runs one collection and moves the machine on by a second.
func collect(m *phctest.Machine, k *phc.Tracker) phc.Round {
	now, _ := m.Read(timebase.Realtime)
	r := k.Collect(m, now)
	m.Advance(int64(time.Second))
	return r
}

// A PHC advancing feeds one model per clock from the second collection on;
// a reading against REALTIME is at its own midpoint, one against
// MONOTONIC_RAW at REALTIME before the collection. Stepped 37 s, the first
// reading records the step (once), the models restart and the detectors too:
// the collection after has a model again and no step.
func TestTrackerFeedsModelsAndRestartsThemAfterAStep(t *testing.T) {
	m, tr := phctest.New(), timebase.NewTranslators()
	k := tracker(m, tr)
	for i := range 6 {
		if i == 4 {
			m.PHCNS += 37e9
		}
		before := m.Now(timebase.DomainRealtime)
		r := collect(m, k)
		if r.Err != nil || r.NotAdvancing != nil || r.Stopped != 0 || len(r.Taken) != 2 {
			t.Fatalf("collection %d: %+v", i, r)
		}
		if rt, raw := r.Taken[0], r.Taken[1]; rt.At != rt.Reading.SysNS || raw.At <= before || raw.At >= rt.At || raw.Against != timebase.DomainMonotonicRaw {
			t.Errorf("collection %d: times %d %d, collection began at %d", i, rt.At, raw.At, before)
		}
		if (r.Step != nil) != (i == 4) {
			t.Fatalf("collection %d: step %+v", i, r.Step)
		}
		if i == 4 && (r.Step != &r.Taken[0] || r.Step.Judgement.StepNS < 36e9) {
			t.Errorf("step %+v, want the reading against realtime", r.Step)
		}
		_, err := tr.Move(timebase.Timestamp{NS: m.PHCNS, Domain: m.Dom}, timebase.DomainRealtime)
		if want := i == 0 || i == 4; (err != nil) != want {
			t.Errorf("collection %d: moving a PHC stamp: %v", i, err)
		}
	}
}

// A stopped PHC is counted in every reading that saw it, the collection's
// error names the device, the clock and ErrNotAdvancing, and there is no model.
func TestTrackerStoppedPHC(t *testing.T) {
	m, tr := phctest.New(), timebase.NewTranslators()
	k := tracker(m, tr)
	m.RatePPB = -1e9
	collect(m, k)
	r := collect(m, k)
	if r.Stopped != 2 || !errors.Is(r.NotAdvancing, phc.ErrNotAdvancing) || r.Step != nil || r.Err != nil {
		t.Fatalf("%+v", r)
	}
	if want := "phc /dev/ptp3 against monotonic_raw: PHC is not advancing"; !strings.HasPrefix(r.NotAdvancing.Error(), want) {
		t.Errorf("error %q", r.NotAdvancing)
	}
	if _, err := tr.Move(timebase.Timestamp{NS: m.PHCNS, Domain: m.Dom}, timebase.DomainRealtime); err == nil {
		t.Error("a model of a stopped PHC")
	}
}

// failing fails readings against MONOTONIC_RAW.
type failing struct{ *phctest.Machine }

var errIO = errors.New("input/output error")

func (f failing) Sample(sys timebase.Domain, r *phc.Reading) error {
	if sys == timebase.DomainMonotonicRaw {
		return errIO
	}
	return f.Machine.Sample(sys, r)
}

// A reading that fails ends the collection with its error, naming device and
// clock; the step the reading before it revealed stands.
func TestTrackerKeepsWhatAFailedCollectionSaw(t *testing.T) {
	m := phctest.New()
	k := tracker(m, nil)
	for range 3 {
		collect(m, k)
	}
	m.PHCNS += 37e9
	now, _ := m.Read(timebase.Realtime)
	r := k.Collect(failing{m}, now)
	if !errors.Is(r.Err, errIO) || r.Err.Error() != "phc /dev/ptp3 against monotonic_raw: input/output error" || len(r.Taken) != 1 || r.Step == nil {
		t.Fatalf("%+v", r)
	}
}
