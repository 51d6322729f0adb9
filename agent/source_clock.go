package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// clockSource measures the system clocks against a reference clock
// (MONOTONIC_RAW by default, which no NTP or PTP daemon steers), the kernel's
// adjtimex state, and detects clock steps.
type clockSource struct {
	cfg         ClockConfig
	ref         timebase.SystemClock
	clocks      []*clockTrack
	read        func(timebase.SystemClock) (int64, error)
	timex       func() (timebase.KernelState, error)
	translators *timebase.Translators
	window      int
}

type clockTrack struct {
	clk   timebase.SystemClock
	tags  []record.Tag
	steps timebase.OffsetSteps // its step detector
	n     uint64               // steps seen
}

func buildClockSource(env *Env) ([]collect.Source, error) {
	s, err := newClockSource(env.Config.Clock, func(c timebase.SystemClock) (int64, error) { return c.Now() }, timebase.ReadKernelState, env.Translators)
	if err != nil {
		return nil, err
	}
	return []collect.Source{s}, nil
}

func newClockSource(cfg ClockConfig, read func(timebase.SystemClock) (int64, error), timex func() (timebase.KernelState, error), tr *timebase.Translators) (*clockSource, error) {
	refDomain, err := timebase.ParseDomain(cfg.Reference)
	if err != nil {
		return nil, keyErr("clock.reference", "%v", err)
	}
	ref, _ := timebase.SystemClockFor(refDomain) // found: check refuses a clock.reference that is no system clock
	if tr == nil {
		tr = timebase.NewTranslators()
	}
	s := &clockSource{cfg: cfg, ref: ref, read: read, timex: timex, translators: tr, window: 32}
	for _, name := range cfg.Clocks {
		d, err := timebase.ParseDomain(name)
		if err != nil {
			return nil, keyErr("clock.clocks", "%v", err)
		}
		c, _ := timebase.SystemClockFor(d) // found: check refuses a clock.clocks entry that is no system clock
		s.clocks = append(s.clocks, &clockTrack{clk: c, tags: []record.Tag{{Key: "clock", Value: c.Domain().String()}, {Key: "ref", Value: ref.Domain().String()}},
			steps: timebase.OffsetSteps{ThresholdNS: int64(cfg.StepThreshold), MaxSlewPPM: cfg.MaxSlewPPM}})
	}
	return s, nil
}

func (s *clockSource) Name() string            { return "clock" }
func (s *clockSource) Interval() time.Duration { return s.cfg.Interval }
func (s *clockSource) Close() error            { return nil }

// bracketReads is how many ref/clk/ref brackets a reading takes the best of: a
// read preempted by the scheduler has a wide window and loses.
const bracketReads = 5

func (s *clockSource) Collect(ctx context.Context, b *collect.Batch) error {
	now, err := s.read(timebase.Realtime)
	if err != nil {
		return err
	}
	var errs []error
	hasTAI, hasRT := false, false
	for _, t := range s.clocks {
		o, err := timebase.ReadOffset(s.read, s.ref, t.clk, bracketReads)
		if err != nil {
			errs = append(errs, fmt.Errorf("clock %s: %w", t.clk.Domain(), err))
			continue
		}
		hasTAI = hasTAI || t.clk == timebase.TAI
		hasRT = hasRT || t.clk == timebase.Realtime
		fields := []record.Field{record.Int("offset_ns", o.OffsetNS), record.Int("window_ns", o.WindowNS)}
		tr := s.translators.Get(s.ref.Domain(), t.clk.Domain(), s.window)
		if st, ok := t.steps.Next(o); ok {
			t.n++
			b.Add("clock_step", now, t.tags,
				record.Int("step_ns", st.StepNS), record.Int("offset_before_ns", st.BeforeNS),
				record.Int("offset_after_ns", st.AfterNS), record.Int("interval_ns", st.IntervalNS), record.Uint("steps", t.n))
			s.translators.ResetDomain(t.clk.Domain())
		}
		tr.Add(timebase.Sample{Local: o.MidNS, Ref: o.MidNS + o.OffsetNS, DelayNS: o.WindowNS})
		if m, err := tr.Model(); err == nil && m.N >= 3 {
			// The model's offset is ref - clk, so its slope is minus the rate.
			fields = append(fields, record.Float("rate_ppb", -m.Slope*1e9), record.Float("rate_err_ppb", m.SlopeErr*1e9))
		}
		b.Add("clock_offset", now, t.tags, fields...)
	}
	if hasTAI && hasRT {
		// TAI - UTC as the clocks show it, from a direct bracket.
		if o, err := timebase.ReadOffset(s.read, timebase.Realtime, timebase.TAI, bracketReads); err == nil {
			b.Add("clock_offset", now, []record.Tag{{Key: "clock", Value: "tai"}, {Key: "ref", Value: "realtime"}},
				record.Int("offset_ns", o.OffsetNS), record.Int("window_ns", o.WindowNS))
		}
	}
	if s.cfg.Timex && s.timex != nil {
		k, err := s.timex()
		if err != nil {
			errs = append(errs, err)
		} else {
			b.Add("timex", now, nil, timexFields(k)...)
		}
	}
	return errors.Join(errs...)
}

func timexFields(k timebase.KernelState) []record.Field {
	return []record.Field{
		record.Int("state", int64(k.State)),
		record.Int("status", int64(k.Status)),
		record.String("status_flags", k.StatusString()),
		record.Bool("synced", k.Synced()),
		record.Int("offset_ns", k.OffsetNS),
		record.Int("freq_ppb", k.FreqPPB),
		record.Int("maxerror_ns", k.MaxErrorNS),
		record.Int("esterror_ns", k.EstErrorNS),
		record.Int("constant", k.Constant),
		record.Int("precision_ns", k.PrecisionNS),
		record.Int("tolerance_ppb", k.ToleranceP),
		record.Int("tick_ns", k.TickNS),
		record.Int("tai_offset_s", k.TAIOffsetS),
		record.Int("pps_freq_ppb", k.PPSFreqPPB),
		record.Int("pps_jitter_ns", k.JitterNS),
		record.Int("pps_shift", k.Shift),
		record.Int("pps_stability_ppb", k.StabilPPB),
		record.Int("pps_jitter_count", k.JitCnt),
		record.Int("pps_calibration_count", k.CalCnt),
		record.Int("pps_error_count", k.ErrCnt),
		record.Int("pps_stability_exceeded_count", k.StbCnt),
	}
}

// clockSection is the clock section's entry in the table (config.go).
var clockSection = section{key: "clock", of: func(c *Config) sectionConfig { return &c.Clock },
	sources: []sourceKind{{"clock", func(c *Config) bool { return c.Clock.Enabled }, buildClockSource}}}
