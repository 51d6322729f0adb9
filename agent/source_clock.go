package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

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
	clk        timebase.SystemClock
	tags       []record.Tag
	have       bool
	prevMid    int64
	prevOffset int64
	prevWindow int64
	rate       float64 // offset change per reference ns over the last interval
	haveRate   bool
	steps      uint64
}

func buildClockSource(env *Env) ([]Source, error) {
	s, err := newClockSource(env.Config.Clock, func(c timebase.SystemClock) (int64, error) { return c.Now() }, timebase.ReadKernelState, env.Translators)
	if err != nil {
		return nil, err
	}
	return []Source{s}, nil
}

func newClockSource(cfg ClockConfig, read func(timebase.SystemClock) (int64, error), timex func() (timebase.KernelState, error), tr *timebase.Translators) (*clockSource, error) {
	refDomain, err := timebase.ParseDomain(cfg.Reference)
	if err != nil {
		return nil, keyErr("clock.reference", "%v", err)
	}
	ref, _ := timebase.SystemClockFor(refDomain)
	if tr == nil {
		tr = timebase.NewTranslators()
	}
	s := &clockSource{cfg: cfg, ref: ref, read: read, timex: timex, translators: tr, window: 32}
	for _, name := range cfg.Clocks {
		d, err := timebase.ParseDomain(name)
		if err != nil {
			return nil, keyErr("clock.clocks", "%v", err)
		}
		c, _ := timebase.SystemClockFor(d)
		s.clocks = append(s.clocks, &clockTrack{clk: c, tags: []record.Tag{{Key: "clock", Value: c.Domain().String()}, {Key: "ref", Value: ref.Domain().String()}}})
	}
	return s, nil
}

func (s *clockSource) Name() string            { return "clock" }
func (s *clockSource) Interval() time.Duration { return s.cfg.Interval }
func (s *clockSource) Close() error            { return nil }

// bracketReads is how many ref/clk/ref brackets a reading takes the best of: a
// read preempted by the scheduler has a wide window and loses.
const bracketReads = 5

// bracket reads ref, clk, ref bracketReads times and, from the narrowest window,
// returns the reference time at its middle, the clock's offset from the
// reference there, and the window.
func (s *clockSource) bracket(ref, clk timebase.SystemClock) (mid, offset, window int64, err error) {
	window = -1
	for i := 0; i < bracketReads; i++ {
		a, err := s.read(ref)
		if err != nil {
			return 0, 0, 0, err
		}
		c, err := s.read(clk)
		if err != nil {
			return 0, 0, 0, err
		}
		b, err := s.read(ref)
		if err != nil {
			return 0, 0, 0, err
		}
		if w := b - a; w >= 0 && (window < 0 || w < window) {
			window, mid = w, a+w/2
			offset = c - mid
		}
	}
	if window < 0 {
		return 0, 0, 0, fmt.Errorf("%s went backwards in every read", ref.Domain())
	}
	return mid, offset, window, nil
}

func (s *clockSource) Collect(ctx context.Context, b *Batch) error {
	now, err := s.read(timebase.Realtime)
	if err != nil {
		return err
	}
	var errs []error
	hasTAI, hasRT := false, false
	for _, t := range s.clocks {
		mid, off, win, err := s.bracket(s.ref, t.clk)
		if err != nil {
			errs = append(errs, fmt.Errorf("clock %s: %w", t.clk.Domain(), err))
			continue
		}
		hasTAI = hasTAI || t.clk == timebase.TAI
		hasRT = hasRT || t.clk == timebase.Realtime
		fields := []record.Field{record.Int("offset_ns", off), record.Int("window_ns", win)}
		tr := s.translators.Get(s.ref.Domain(), t.clk.Domain(), s.window)
		if t.have {
			elapsed, delta := mid-t.prevMid, off-t.prevOffset
			if step, ok := s.isStep(t, elapsed, delta, win); ok {
				t.steps++
				b.Add("clock_step", now, t.tags,
					record.Int("step_ns", step), record.Int("offset_before_ns", t.prevOffset),
					record.Int("offset_after_ns", off), record.Int("interval_ns", mid-t.prevMid), record.Uint("steps", t.steps))
				s.translators.ResetDomain(t.clk.Domain())
			} else if elapsed > 0 {
				t.rate, t.haveRate = float64(delta)/float64(elapsed), true
			}
		}
		t.have, t.prevMid, t.prevOffset, t.prevWindow = true, mid, off, win
		tr.Add(timebase.Sample{Local: mid, Ref: mid + off, DelayNS: win})
		if m, err := tr.Model(); err == nil && m.N >= 3 {
			// The model's offset is ref - clk, so its slope is minus the rate.
			fields = append(fields, record.Float("rate_ppb", -m.Slope*1e9), record.Float("rate_err_ppb", m.SlopeErr*1e9))
		}
		b.Add("clock_offset", now, t.tags, fields...)
	}
	if hasTAI && hasRT {
		// TAI - UTC as the clocks show it, from a direct bracket.
		if _, off, win, err := s.bracket(timebase.Realtime, timebase.TAI); err == nil {
			b.Add("clock_offset", now, []record.Tag{{Key: "clock", Value: "tai"}, {Key: "ref", Value: "realtime"}},
				record.Int("offset_ns", off), record.Int("window_ns", win))
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

// isStep decides whether the offset moved more than the clock's last rate, the
// allowed slew and the read windows explain. It returns the unexplained part.
//
// The prediction uses the rate over the previous interval, not the fitted slope:
// a fit over many samples lags when a daemon changes its slew, and the read jitter
// in a one-interval rate (the bracket windows) is far below any step threshold.
func (s *clockSource) isStep(t *clockTrack, elapsed, delta, window int64) (int64, bool) {
	predicted := 0.0
	if t.haveRate {
		predicted = t.rate * float64(elapsed)
	}
	dev := float64(delta) - predicted
	allowed := float64(s.cfg.StepThreshold) + s.cfg.MaxSlewPPM*1e-6*math.Abs(float64(elapsed)) + float64(window+t.prevWindow)
	if math.Abs(dev) > allowed {
		return int64(math.Round(dev)), true
	}
	return 0, false
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
