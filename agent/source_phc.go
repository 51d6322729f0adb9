package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// phcSource samples one PTP hardware clock against the system clocks (the figures
// phc2sys works from, without adjusting anything) and keeps the translators from
// each system clock to the PHC.
type phcSource struct {
	cfg     PHCConfig
	path    string
	name    string // driver's clock name
	open    func(path string, samples int, m phc.Method) (phcClock, error)
	read    func(timebase.SystemClock) (int64, error)
	method  phc.Method
	against []timebase.Domain
	tr      *timebase.Translators
	log     *slog.Logger

	dev     phcClock
	domain  timebase.Domain
	opens   uint64
	reopens uint64 // opens after the first

	// judges holds, for each clock of against, the step detector its
	// readings pass, judged against MONOTONIC_RAW; taken is the collection's
	// readings.
	judges       []phc.StepDetector
	taken        []phcTaken
	notAdvancing uint64 // readings that found the PHC stopped
	steps        uint64 // steps of the PHC seen
}

// phcTaken is one reading of a collection, the time of its records and its
// step detector's verdict.
type phcTaken struct {
	r  phc.Reading
	at int64
	j  phc.Judgement
}

// phcClock is an open PHC as the source uses it: a *phc.Device and its
// Sampler (openPHC), or a scripted clock in tests.
type phcClock interface {
	Domain() timebase.Domain
	Sample(sys timebase.Domain, r *phc.Reading) error
	Fallbacks() uint64
	Refusals() []string
	Close() error
}

// sampledPHC is a PHC device with its sampler.
type sampledPHC struct {
	*phc.Device
	*phc.Sampler
}

// openPHC opens the device at path and its sampler of samples reads a
// reading, preferring method m.
func openPHC(path string, samples int, m phc.Method) (phcClock, error) {
	d, err := phc.Open(path)
	if err != nil {
		return nil, err
	}
	return sampledPHC{d, d.NewSampler(samples, m)}, nil
}

func buildPHCSources(env *Env) ([]Source, error) {
	cfg := env.Config.PHC
	paths, err := resolvePHCs(env.Config, phc.Discover, phc.InterfacePHC)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		env.Log.Info("no PTP hardware clock found; phc source idle", "sysfs", env.Config.Paths.Sys+"/class/ptp")
		return nil, nil
	}
	infos, _ := phc.Discover(phc.Paths{Sys: env.Config.Paths.Sys, Dev: env.Config.Paths.Dev})
	var out []Source
	for _, p := range paths {
		s := newPHCSource(cfg, p, openPHC, timebase.SystemClock.Now, env.Translators, env.Log)
		for _, info := range infos {
			if info.Device == p {
				s.name = info.Name
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// newPHCSource is the phc source of the PHC at path, opened with open, with
// the system clocks read through read. cfg is valid.
func newPHCSource(cfg PHCConfig, path string, open func(string, int, phc.Method) (phcClock, error), read func(timebase.SystemClock) (int64, error), tr *timebase.Translators, log *slog.Logger) *phcSource {
	method, _ := phc.ParseMethod(cfg.Method)
	s := &phcSource{cfg: cfg, path: path, open: open, read: read, method: method, tr: tr, log: log}
	for _, a := range cfg.Against {
		d, _ := timebase.ParseDomain(a)
		s.against = append(s.against, d)
		s.judges = append(s.judges, phc.StepDetector{
			ThresholdNS: int64(cfg.StepThreshold), MaxSlewPPB: int64(math.Round(cfg.MaxSlewPPM * 1000)),
		})
	}
	return s
}

// resolvePHCs lists the PHC device paths to measure (phc.Select), naming the
// interface whose PHC could not be found.
func resolvePHCs(c *Config, discover func(phc.Paths) ([]phc.Info, error), ifacePHC func(string) (int, error)) ([]string, error) {
	paths, err := phc.Select(phc.Paths{Sys: c.Paths.Sys, Dev: c.Paths.Dev}, c.PHC.Devices, c.PHC.Interfaces, discover, ifacePHC)
	var ie *phc.InterfaceError
	if errors.As(err, &ie) {
		return nil, keyErr(fmt.Sprintf("phc.interfaces[%d]", ie.Index), "%v", ie)
	}
	return paths, err
}

func (s *phcSource) Name() string            { return "phc:" + s.path }
func (s *phcSource) Interval() time.Duration { return s.cfg.Interval }

func (s *phcSource) Close() error {
	if s.dev == nil {
		return nil
	}
	err := s.dev.Close()
	s.dev = nil
	return err
}

func (s *phcSource) Collect(ctx context.Context, b *Batch) error {
	if s.dev == nil {
		d, err := s.open(s.path, s.cfg.Samples, s.method)
		if err != nil {
			return err
		}
		if s.noteOpen() {
			s.log.Info("phc reopened", "device", s.path, "reopens", s.reopens)
		}
		s.dev, s.domain = d, d.Domain()
		for i := range s.judges {
			s.judges[i].Forget() // the PHC may have been reset while closed
		}
	}
	now, err := s.read(timebase.Realtime)
	if err != nil {
		return err
	}
	s.taken = s.taken[:0]
	for i, sys := range s.against {
		var t phcTaken
		ref, win, err := s.sample(sys, &t.r)
		if err != nil {
			// What the readings taken so far revealed stands: a step seen
			// restarts the models even if the device then failed.
			judged := s.judged(b)
			if !errors.Is(err, phc.ErrMethodUnsupported) {
				// The device failed (vanished, I/O error): reopen next time.
				s.Close()
			}
			return errors.Join(fmt.Errorf("phc %s against %s: %w", s.path, sys, err), judged)
		}
		t.j = s.judges[i].Judge(ref, t.r.PHCNS, win)
		// The reading's own time: its system-clock midpoint when that clock
		// is REALTIME, else REALTIME read just before the sampling began.
		t.at = now
		if sys == timebase.DomainRealtime {
			t.at = t.r.SysNS
		}
		r := &t.r
		b.Add("phc_offset", t.at, s.tags(sys),
			record.Int("offset_ns", r.OffsetNS),
			record.Int("delay_ns", r.DelayNS),
			record.Int("phc_ns", r.PHCNS),
			record.Int("sys_ns", r.SysNS),
			record.Int("samples", int64(r.Samples)),
			record.String("method", r.Method.String()),
			record.Int("bracket_ns", r.BracketNS),
		)
		s.taken = append(s.taken, t)
	}
	return s.judged(b)
}

// sample takes a reading against sys and says where it lies on MONOTONIC_RAW,
// which nobody steps or slews, for the step detector: the reading's own
// time and window when the kernel read it against MONOTONIC_RAW, else the
// middle and width of MONOTONIC_RAW reads around the sampling (a reading
// moved from REALTIME could carry a REALTIME step into the PHC's judgement).
func (s *phcSource) sample(sys timebase.Domain, r *phc.Reading) (ref, window int64, err error) {
	before, err := s.read(timebase.MonotonicRaw)
	if err != nil {
		return 0, 0, err
	}
	if err := s.dev.Sample(sys, r); err != nil {
		return 0, 0, err
	}
	if r.SysDomain == timebase.DomainMonotonicRaw && r.BracketNS == 0 {
		return r.SysNS, r.DelayNS, nil
	}
	after, err := s.read(timebase.MonotonicRaw)
	if err != nil {
		return 0, 0, err
	}
	return before + (after-before)/2, after - before, nil
}

// judged acts on the step detectors' verdicts on the collection's readings.
// When each found the PHC advancing, the readings feed the PHC's models. A
// reading that found it stepped or stopped restarts them: the models are
// forgotten, the step is recorded (once, by the first reading that revealed
// it) and counted, and the detectors judged before that reading forget it
// too (it may predate the step; the readings after it do not), so every
// model starts again from readings after the step. Until the next
// collection there is no model of the PHC, and the sources that move its
// stamps count them untranslated. A stopped PHC is an error of the
// collection; a step is not: it is what the PHC did.
func (s *phcSource) judged(b *Batch) error {
	first := slices.IndexFunc(s.taken, func(t phcTaken) bool {
		return t.j.Verdict == phc.VerdictStepped || t.j.Verdict == phc.VerdictStopped
	})
	if first < 0 {
		for i, t := range s.taken {
			if t.j.Verdict == phc.VerdictAdvancing && s.tr != nil {
				s.tr.Get(s.against[i], s.domain, s.cfg.Window).Add(t.r.Sample())
			}
		}
		return nil
	}
	if s.tr != nil {
		s.tr.ResetDomain(s.domain)
	}
	for i := range first {
		s.judges[i].Forget()
	}
	var stopped error
	stepped := false
	for i, t := range s.taken[first:] {
		sys := s.against[first+i]
		switch j := t.j; j.Verdict {
		case phc.VerdictStopped:
			s.notAdvancing++
			stopped = fmt.Errorf("phc %s against %s: %w", s.path, sys, j.Err(timebase.DomainMonotonicRaw))
		case phc.VerdictStepped:
			if stepped {
				continue
			}
			stepped = true
			s.steps++
			b.Add("phc_step", t.at, s.tags(sys),
				record.Int("step_ns", j.StepNS), record.Int("bound_ns", j.BoundNS),
				record.Int("phc_before_ns", j.PHCBeforeNS), record.Int("phc_after_ns", j.PHCAfterNS),
				record.Int("interval_ns", j.ElapsedNS), record.Int("predicted_ns", j.PredictedNS),
				record.Uint("steps", s.steps))
		}
	}
	return stopped
}

// tags are the tags of the PHC's records about its readings against sys.
func (s *phcSource) tags(sys timebase.Domain) []record.Tag {
	return []record.Tag{{Key: "device", Value: s.domain.String()}, {Key: "clock", Value: sys.String()}, {Key: "clock_name", Value: s.name}}
}

// noteOpen counts an open of the device and reports whether it was a reopen:
// the first open is not one.
func (s *phcSource) noteOpen() bool {
	s.opens++
	if s.opens == 1 {
		return false
	}
	s.reopens++
	return true
}

// SelfFields reports device reopens, readings that found the PHC stopped,
// its steps, read-method fallbacks and why methods were refused.
func (s *phcSource) SelfFields() []record.Field {
	f := []record.Field{record.Uint("reopens", s.reopens), record.Uint("not_advancing", s.notAdvancing), record.Uint("steps", s.steps)}
	if s.dev == nil {
		return f
	}
	f = append(f, record.Uint("method_fallbacks", s.dev.Fallbacks()))
	if r := s.dev.Refusals(); len(r) > 0 {
		f = append(f, record.String("method_refusals", fmt.Sprint(r)))
	}
	return f
}

// phcSection is the phc section's entry in the table (config.go).
var phcSection = section{key: "phc", of: func(c *Config) sectionConfig { return &c.PHC }, fatal: true,
	sources: []sourceKind{{"phc", func(c *Config) bool { return c.PHC.Enabled }, buildPHCSources}}}
