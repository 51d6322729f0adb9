package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	tr      *Translators
	log     *slog.Logger

	dev     phcClock
	domain  timebase.Domain
	opens   uint64
	reopens uint64 // opens after the first

	prev         map[timebase.Domain]phcLast // the last reading against each clock
	notAdvancing uint64                      // readings that found the PHC stopped
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

// phcLast is a source's last reading against one clock, with MONOTONIC_RAW
// when it was taken.
type phcLast struct {
	r   phc.Reading
	raw int64
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
	method, _ := phc.ParseMethod(cfg.Method)
	var against []timebase.Domain
	for _, a := range cfg.Against {
		d, _ := timebase.ParseDomain(a)
		against = append(against, d)
	}
	infos, _ := phc.Discover(phc.Paths{Sys: env.Config.Paths.Sys, Dev: env.Config.Paths.Dev})
	var out []Source
	for _, p := range paths {
		s := &phcSource{cfg: cfg, path: p, open: openPHC, read: timebase.SystemClock.Now, method: method, against: against, tr: env.Translators, log: env.Log}
		for _, info := range infos {
			if info.Device == p {
				s.name = info.Name
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// resolvePHCs lists the PHC device paths to measure: the configured devices, the
// PHCs of the configured interfaces, or every PHC found when neither is set.
func resolvePHCs(c *Config, discover func(phc.Paths) ([]phc.Info, error), ifacePHC func(string) (int, error)) ([]string, error) {
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, d := range c.PHC.Devices {
		add(d)
	}
	for i, iface := range c.PHC.Interfaces {
		idx, err := ifacePHC(iface)
		if err != nil {
			return nil, keyErr(fmt.Sprintf("phc.interfaces[%d]", i), "%v", err)
		}
		if idx < 0 {
			return nil, keyErr(fmt.Sprintf("phc.interfaces[%d]", i), "interface %s has no PTP hardware clock", iface)
		}
		add(fmt.Sprintf("%s/ptp%d", c.Paths.Dev, idx))
	}
	if len(c.PHC.Devices) == 0 && len(c.PHC.Interfaces) == 0 {
		infos, err := discover(phc.Paths{Sys: c.Paths.Sys, Dev: c.Paths.Dev})
		if err != nil {
			return nil, err
		}
		for _, info := range infos {
			add(info.Device)
		}
	}
	return paths, nil
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
		clear(s.prev) // the PHC may have been reset while closed
	}
	raw, err := s.read(timebase.MonotonicRaw)
	if err != nil {
		return err
	}
	now, err := s.read(timebase.Realtime)
	if err != nil {
		return err
	}
	dev := s.domain.String()
	var stopped error
	reset := false
	for _, sys := range s.against {
		var r phc.Reading
		if err := s.dev.Sample(sys, &r); err != nil {
			if !errors.Is(err, phc.ErrMethodUnsupported) {
				// The device failed (vanished, I/O error): reopen next time.
				s.Close()
			}
			return fmt.Errorf("phc %s against %s: %w", s.path, sys, err)
		}
		// The reading's own time: its system-clock midpoint when that clock
		// is REALTIME, else REALTIME read just before the sampling began.
		at := now
		if sys == timebase.DomainRealtime {
			at = r.SysNS
		}
		b.Add("phc_offset", at, []record.Tag{{Key: "device", Value: dev}, {Key: "clock", Value: sys.String()}, {Key: "clock_name", Value: s.name}},
			record.Int("offset_ns", r.OffsetNS),
			record.Int("delay_ns", r.DelayNS),
			record.Int("phc_ns", r.PHCNS),
			record.Int("sys_ns", r.SysNS),
			record.Int("samples", int64(r.Samples)),
			record.String("method", r.Method.String()),
			record.Int("bracket_ns", r.BracketNS),
		)
		// A reading feeds the clock model only once the next one shows the
		// PHC advancing, judged against MONOTONIC_RAW, which nobody steps:
		// a stopped PHC's readings (recorded, as they are) would map every
		// stamp to one instant, and a PHC stepped back would bend the fit.
		// A failed check forgets the PHC's models, which start again.
		last, seen := s.prev[sys]
		if s.prev == nil {
			s.prev = map[timebase.Domain]phcLast{}
		}
		s.prev[sys] = phcLast{r: r, raw: raw}
		if !seen {
			continue
		}
		if err := phc.CheckElapsed(r.PHCNS-last.r.PHCNS, raw-last.raw, timebase.DomainMonotonicRaw); err != nil {
			s.notAdvancing++
			stopped = fmt.Errorf("phc %s against %s: %w", s.path, sys, err)
			if !reset && s.tr != nil {
				s.tr.ResetDomain(s.domain)
				reset = true
			}
			continue
		}
		if s.tr != nil && !reset {
			s.tr.Get(sys, s.domain, s.cfg.Window).Add(r.Sample())
		}
	}
	return stopped
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

// SelfFields reports read-method fallbacks and why methods were refused.
func (s *phcSource) SelfFields() []record.Field {
	if s.dev == nil {
		return []record.Field{record.Uint("reopens", s.reopens), record.Uint("not_advancing", s.notAdvancing)}
	}
	f := []record.Field{record.Uint("method_fallbacks", s.dev.Fallbacks()), record.Uint("reopens", s.reopens), record.Uint("not_advancing", s.notAdvancing)}
	if r := s.dev.Refusals(); len(r) > 0 {
		f = append(f, record.String("method_refusals", fmt.Sprint(r)))
	}
	return f
}
