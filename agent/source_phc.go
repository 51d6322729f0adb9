package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// phcSource samples one PTP hardware clock against the system clocks (the figures
// phc2sys works from, without adjusting anything) and keeps the translators from
// each system clock to the PHC (phc.Tracker).
type phcSource struct {
	cfg    PHCConfig
	path   string
	name   string // driver's clock name
	open   func(path string, samples int, m phc.Method) (phcClock, error)
	read   func(timebase.SystemClock) (int64, error)
	method phc.Method
	track  *phc.Tracker
	log    *slog.Logger

	dev     phcClock
	domain  timebase.Domain
	opens   uint64
	reopens uint64 // opens after the first

	notAdvancing uint64 // readings that found the PHC stopped
	steps        uint64 // steps of the PHC seen

	judged  *judgement                   // the system clock against the PHC (phc.judge), or nil
	taiUTC  func() (int64, error)        // TAI−UTC in s, for a PHC on TAI
	through func() (*judge.Judged, bool) // the clock the PHC follows (phc.through)
}

// phcClock is an open PHC as the source uses it: a phc.Sampled (openPHC), or
// a scripted clock in tests.
type phcClock interface {
	phc.SampleSource
	Fallbacks() uint64
	Refusals() []string
	Close() error
}

// openPHC opens the device at path and its sampler of samples reads a
// reading, preferring method m.
func openPHC(path string, samples int, m phc.Method) (phcClock, error) {
	d, err := phc.OpenSampled(path, samples, m)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func buildPHCSources(env *Env) ([]collect.Source, error) {
	cfg := env.Config.PHC
	sel, err := resolvePHCs(env.Config, phc.Discover, phc.InterfacePHC)
	if err != nil {
		return nil, err
	}
	if len(sel) == 0 {
		env.Log.Info("no PTP hardware clock found; phc source idle", "sysfs", env.Config.Paths.Sys+"/class/ptp")
		return nil, nil
	}
	var out []collect.Source
	for _, in := range sel {
		s := newPHCSource(cfg, in.Device, openPHC, timebase.SystemClock.Now, env.Translators, env.Log)
		s.name = in.Name
		if err := s.judge(env); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// judge registers the system clock's judge against the PHC (phc.judge),
// through the ptp4l monitor's judged clock when phc.through says so.
func (s *phcSource) judge(env *Env) (err error) {
	c, source := env.Config, "phc:"+s.path
	s.taiUTC = func() (int64, error) {
		if c.PHC.TAIUTC > 0 {
			return int64(c.PHC.TAIUTC), nil
		}
		k, err := timebase.ReadKernelState()
		return k.TAIOffsetS, err
	}
	if c.PHC.Judge.Enabled && c.PHC.Through == "ptp4l" {
		up, err := ptp4lJudged(c) // the cross-section rule, through the kit
		if err != nil {
			return err
		}
		source = "ptp4l+" + source
		s.through = func() (*judge.Judged, bool) { j := env.judges.Find(up); return j, j != nil }
	}
	if s.judged, err = env.judges.Add("system", source, c.PHC.Judge, 3*c.PHC.Interval); err != nil {
		return keyErr("phc.judge", "%v", err)
	}
	return nil
}

// newPHCSource is the phc source of the PHC at path, opened with open, with
// the system clocks read through read. cfg is valid.
func newPHCSource(cfg PHCConfig, path string, open func(string, int, phc.Method) (phcClock, error), read func(timebase.SystemClock) (int64, error), tr *timebase.Translators, log *slog.Logger) *phcSource {
	method, _ := phc.ParseMethod(cfg.Method)
	tc := phc.TrackerConfig{Path: path, Window: cfg.Window, Read: read, Translators: tr,
		Detector: phc.StepDetector{ThresholdNS: int64(cfg.StepThreshold), MaxSlewPPB: int64(math.Round(cfg.MaxSlewPPM * 1000))}}
	for _, a := range cfg.Against {
		d, _ := timebase.ParseDomain(a)
		tc.Against = append(tc.Against, d)
	}
	return &phcSource{cfg: cfg, path: path, open: open, read: read, method: method, track: phc.NewTracker(tc), log: log}
}

// resolvePHCs lists the PHCs to measure (phc.Select), naming the interface
// whose PHC could not be found.
func resolvePHCs(c *Config, discover func(phc.Paths) ([]phc.Info, error), ifacePHC func(string) (int, error)) ([]phc.Info, error) {
	sel, err := phc.Select(phc.Paths{Sys: c.Paths.Sys, Dev: c.Paths.Dev}, c.PHC.Devices, c.PHC.Interfaces, discover, ifacePHC)
	var ie *phc.InterfaceError
	if errors.As(err, &ie) {
		return nil, keyErr(fmt.Sprintf("phc.interfaces[%d]", ie.Index), "%v", ie)
	}
	return sel, err
}

func (s *phcSource) Name() string            { return "phc:" + s.path }
func (s *phcSource) Interval() time.Duration { return s.cfg.Interval }

// Close closes the device the last collection opened; the agent calls it
// once, after Run.
func (s *phcSource) Close() error {
	if s.dev == nil {
		return nil
	}
	return s.dev.Close()
}

func (s *phcSource) Collect(ctx context.Context, b *collect.Batch) error {
	if s.dev == nil {
		d, err := s.open(s.path, s.cfg.Samples, s.method)
		if err != nil {
			return err
		}
		if s.noteOpen() {
			s.log.Info("phc reopened", "device", s.path, "reopens", s.reopens)
		}
		s.dev, s.domain = d, d.Domain()
		s.track.Forget() // the PHC may have been reset while closed
	}
	now, err := s.read(timebase.Realtime)
	if err != nil {
		return err
	}
	round := s.track.Collect(s.dev, now)
	s.judgeRound(b, &round, now)
	for _, t := range round.Taken {
		r := &t.Reading
		b.Add("phc_offset", t.At, s.tags(t.Against),
			record.Int("offset_ns", r.OffsetNS),
			record.Int("delay_ns", r.DelayNS),
			record.Int("phc_ns", r.PHCNS),
			record.Int("sys_ns", r.SysNS),
			record.Int("samples", int64(r.Samples)),
			record.String("method", r.Method.String()),
			record.Int("bracket_ns", r.BracketNS),
		)
	}
	if t := round.Step; t != nil {
		j := t.Judgement
		s.steps++
		b.Add("phc_step", t.At, s.tags(t.Against),
			record.Int("step_ns", j.StepNS), record.Int("bound_ns", j.BoundNS),
			record.Int("phc_before_ns", j.PHCBeforeNS), record.Int("phc_after_ns", j.PHCAfterNS),
			record.Int("interval_ns", j.ElapsedNS), record.Int("predicted_ns", j.PredictedNS),
			record.Uint("steps", s.steps))
	}
	s.notAdvancing += uint64(round.Stopped)
	if round.Err == nil {
		return round.NotAdvancing
	}
	if !errors.Is(round.Err, phc.ErrMethodUnsupported) {
		s.Close() // the device failed (vanished, I/O error): reopen next time
	}
	return errors.Join(round.Err, round.NotAdvancing)
}

// judgeRound judges the system clock against the PHC from the round's
// reading against REALTIME: offset = REALTIME − the PHC's UTC time (its TAI
// time less TAI−UTC when it keeps TAI), bound = the read window's
// (judge.Reading), plus the bound of the clock the PHC follows (phc.through),
// which must be LOCKED. A stopped PHC, or one on TAI when TAI−UTC is
// unknown, is not synchronised; a round without that reading is a miss.
func (s *phcSource) judgeRound(b adder, round *phc.Round, now int64) {
	if s.judged == nil {
		return
	}
	i := slices.IndexFunc(round.Taken, func(t phc.Taken) bool { return t.Against == timebase.DomainRealtime })
	if i < 0 {
		s.judged.Missed(b, now)
		return
	}
	t := &round.Taken[i]
	smp := judge.Sample{TimeNS: t.At, Synced: round.Stopped == 0, OffsetNS: t.Reading.OffsetNS, FreqErrPPB: -1}
	if s.cfg.Timescale == "tai" {
		tai, err := s.taiUTC()
		smp.OffsetNS += tai * 1e9
		smp.Synced = smp.Synced && err == nil && tai > 0
	}
	smp.BoundNS = judge.Reading(smp.OffsetNS, t.Reading.DelayNS)
	if s.through != nil {
		up, ok := s.through()
		v := judge.View{}
		if ok {
			v = up.View(t.At)
		}
		smp.Synced = smp.Synced && v.State == judge.Locked
		smp.BoundNS = judge.Sum(smp.BoundNS, v.BoundNS)
	}
	s.judged.Observe(b, smp)
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
