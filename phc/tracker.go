package phc

import (
	"fmt"
	"slices"

	"github.com/monagent/monagent/timebase"
)

// SampleSource is a PHC as a Tracker reads it: a Device with its Sampler
// (OpenSampled), or a scripted machine in tests (phctest).
type SampleSource interface {
	Domain() timebase.Domain
	Sample(sys timebase.Domain, r *Reading) error
}

// Sampled is an open PHC device with its sampler.
type Sampled struct {
	*Device
	*Sampler
}

// OpenSampled opens the device at path with a sampler taking the best of
// samples reads, preferring method m (Device.NewSampler).
func OpenSampled(path string, samples int, m Method) (Sampled, error) {
	d, err := Open(path)
	if err != nil {
		return Sampled{}, err
	}
	return Sampled{d, d.NewSampler(samples, m)}, nil
}

// TrackerConfig is what a Tracker follows and how it judges.
type TrackerConfig struct {
	Path    string            // the device, named in errors
	Against []timebase.Domain // the system clocks read against, in order
	// Detector is the StepDetector each clock's readings pass (its
	// threshold and slew; its state is ignored).
	Detector StepDetector
	// Window is the samples in the translators' models of the PHC.
	Window int
	// Read reads a system clock (timebase.SystemClock.Now).
	Read func(timebase.SystemClock) (int64, error)
	// Translators get the readings of collections where the PHC advanced,
	// one model per clock of Against; nil feeds none.
	Translators *timebase.Translators
}

// Tracker follows one PHC from collection to collection: it reads it
// against each clock of Against, judges every reading against MONOTONIC_RAW
// (which nobody steps or slews) with a StepDetector per clock, and keeps
// the translators' models of the PHC: fed the readings while the PHC
// advances, restarted when a reading finds it stepped or stopped. Not safe
// for concurrent use.
type Tracker struct {
	cfg    TrackerConfig
	judges []StepDetector
	taken  []Taken
}

// Taken is one reading of a collection with its verdict.
type Taken struct {
	Against   timebase.Domain
	Reading   Reading
	Judgement Judgement
	// At is the reading's own time: its system-clock midpoint when that
	// clock is REALTIME, else REALTIME read before the collection began.
	At int64
}

// Round is what one collection found.
type Round struct {
	// Taken are the readings, one per clock of Against in order, up to a
	// failed one. They stay valid until the next Collect.
	Taken []Taken
	// Step is the first reading that found the PHC stepped (a step is one
	// event however many clocks see it), or nil.
	Step *Taken
	// Stopped counts the readings that found the PHC stopped;
	// NotAdvancing is the last of them as an error (ErrNotAdvancing).
	Stopped      int
	NotAdvancing error
	// Err is the failed reading's error, naming device and clock: reopen the
	// device unless it is ErrMethodUnsupported.
	Err error
}

// NewTracker is a tracker of the PHC c describes, nothing read yet.
func NewTracker(c TrackerConfig) *Tracker {
	t := &Tracker{cfg: c}
	for range c.Against {
		t.judges = append(t.judges, StepDetector{ThresholdNS: c.Detector.ThresholdNS, MaxSlewPPB: c.Detector.MaxSlewPPB})
	}
	return t
}

// Forget drops what the detectors know: the PHC may have been reset while
// its device was closed.
func (t *Tracker) Forget() {
	for i := range t.judges {
		t.judges[i].Forget()
	}
}

// Collect reads dev against each clock in turn, judges the readings and
// acts on the verdicts, even when a reading failed: what the readings taken
// so far revealed stands. nowRT is REALTIME read just before.
//
// When every reading found the PHC advancing, they feed the PHC's models. A
// reading that found it stepped or stopped restarts them: the models are
// forgotten, and the detectors judged before that reading forget it too (it
// may predate the step; the readings after it do not), so every model
// starts again from readings after the step. Until the next collection there
// is no model of the PHC, and whoever moves its stamps counts them
// untranslated. A stopped PHC is an error of the collection; a step is not:
// it is what the PHC did.
func (t *Tracker) Collect(dev SampleSource, nowRT int64) Round {
	t.taken = t.taken[:0]
	var failed error
	for i, sys := range t.cfg.Against {
		k := Taken{Against: sys, At: nowRT}
		ref, win, err := t.sample(dev, sys, &k.Reading)
		if err != nil {
			failed = fmt.Errorf("phc %s against %s: %w", t.cfg.Path, sys, err)
			break
		}
		k.Judgement = t.judges[i].Judge(ref, k.Reading.PHCNS, win)
		if sys == timebase.DomainRealtime {
			k.At = k.Reading.SysNS
		}
		t.taken = append(t.taken, k)
	}
	r := t.settle(dev.Domain())
	r.Err = failed
	return r
}

// sample takes a reading against sys and says where it lies on
// MONOTONIC_RAW for the step detector: the reading's own time and window
// when the kernel read it against MONOTONIC_RAW, else the middle and width
// of MONOTONIC_RAW reads around the sampling (a reading moved from REALTIME
// could carry a REALTIME step into the PHC's judgement).
func (t *Tracker) sample(dev SampleSource, sys timebase.Domain, r *Reading) (ref, window int64, err error) {
	before, err := t.cfg.Read(timebase.MonotonicRaw)
	if err != nil {
		return 0, 0, err
	}
	if err := dev.Sample(sys, r); err != nil {
		return 0, 0, err
	}
	if r.SysDomain == timebase.DomainMonotonicRaw && r.BracketNS == 0 {
		return r.SysNS, r.DelayNS, nil
	}
	after, err := t.cfg.Read(timebase.MonotonicRaw)
	if err != nil {
		return 0, 0, err
	}
	return before + (after-before)/2, after - before, nil
}

// settle acts on the verdicts of the readings taken (Collect).
func (t *Tracker) settle(dom timebase.Domain) Round {
	r := Round{Taken: t.taken}
	tr := t.cfg.Translators
	first := slices.IndexFunc(t.taken, func(k Taken) bool {
		return k.Judgement.Verdict == VerdictStepped || k.Judgement.Verdict == VerdictStopped
	})
	if first < 0 {
		for _, k := range t.taken {
			if k.Judgement.Verdict == VerdictAdvancing && tr != nil {
				tr.Get(k.Against, dom, t.cfg.Window).Add(k.Reading.Sample())
			}
		}
		return r
	}
	if tr != nil {
		tr.ResetDomain(dom)
	}
	for i := range first {
		t.judges[i].Forget()
	}
	for i := first; i < len(t.taken); i++ {
		switch k := &t.taken[i]; k.Judgement.Verdict {
		case VerdictStopped:
			r.Stopped++
			r.NotAdvancing = fmt.Errorf("phc %s against %s: %w", t.cfg.Path, k.Against, k.Judgement.Err(timebase.DomainMonotonicRaw))
		case VerdictStepped:
			if r.Step == nil {
				r.Step = k
			}
		}
	}
	return r
}
