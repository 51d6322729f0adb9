package phc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// ioctls is the kernel interface of a PHC character device. The real one issues
// ioctl(2) on an open /dev/ptpN; tests use fakes. Results go into caller-owned
// structs so a sample allocates nothing.
type ioctls interface {
	caps(*unix.PtpClockCaps) error
	sysOffsetExtended(*unix.PtpSysOffsetExtended) error
	sysOffset(*unix.PtpSysOffset) error
	sysOffsetPrecise(*unix.PtpSysOffsetPrecise) error
	pin(*unix.PtpPinDesc) error
	close() error
}

// Sampler measures the offset between one PHC and the system clocks with the best
// method the device and kernel support, degrading to the next method when one is
// refused and remembering why. It is not safe for concurrent use.
type Sampler struct {
	dev     ioctls
	caps    Caps
	samples int
	prefer  Method
	// readSys reads a system clock; it brackets REALTIME when a reading has to be
	// moved to another system clock.
	readSys func(timebase.SystemClock) (int64, error)

	ext   unix.PtpSysOffsetExtended
	basic unix.PtpSysOffset
	prec  unix.PtpSysOffsetPrecise

	refused   map[refusalKey]error
	fallbacks uint64
	last      map[timebase.Domain]Method
}

type refusalKey struct {
	m   Method
	sys timebase.Domain
}

func newSampler(dev ioctls, caps Caps, samples int, prefer Method, readSys func(timebase.SystemClock) (int64, error)) *Sampler {
	return &Sampler{
		dev: dev, caps: caps, samples: min(max(samples, 1), MaxSamples), prefer: prefer, readSys: readSys,
		refused: map[refusalKey]error{}, last: map[timebase.Domain]Method{},
	}
}

// Refusals lists, for self-metrics, each method the kernel refused and why.
func (s *Sampler) Refusals() []string {
	var out []string
	for _, m := range []Method{MethodPrecise, MethodExtended, MethodBasic} {
		for _, d := range []timebase.Domain{timebase.DomainRealtime, timebase.DomainMonotonic, timebase.DomainMonotonicRaw} {
			if err := s.refused[refusalKey{m, d}]; err != nil {
				out = append(out, fmt.Sprintf("%s against %s: %v", m, d, err))
			}
		}
	}
	return out
}

// Fallbacks counts readings that were not taken with the preferred method.
func (s *Sampler) Fallbacks() uint64 { return s.fallbacks }

// LastMethod is the method of the last successful reading against sys.
func (s *Sampler) LastMethod(sys timebase.Domain) Method { return s.last[sys] }

// Sample measures the PHC against the system clock sys (REALTIME, MONOTONIC or
// MONOTONIC_RAW) into r.
func (s *Sampler) Sample(sys timebase.Domain, r *Reading) error {
	clk, _ := timebase.SystemClockFor(sys)
	if !ReadsAgainst(sys) {
		return fmt.Errorf("phc sample against %s: not a supported system clock (realtime, monotonic, monotonic_raw)", sys)
	}
	first := true
	for _, m := range s.order() {
		err := s.direct(m, sys, clk, r)
		if err == nil {
			if !first || m != s.preferred() {
				s.fallbacks++
			}
			s.last[sys] = m
			return nil
		}
		if !errors.Is(err, ErrMethodUnsupported) {
			return err
		}
		first = false
	}
	if sys != timebase.DomainRealtime {
		// Nothing reads against sys directly: read against REALTIME and move the
		// reading with a bracketed clock read.
		if err := s.Sample(timebase.DomainRealtime, r); err != nil {
			return err
		}
		if err := s.bracket(clk, r); err != nil {
			return err
		}
		s.fallbacks++
		s.last[sys] = r.Method
		return nil
	}
	return fmt.Errorf("phc sample against %s: every method refused: %w", sys, ErrMethodUnsupported)
}

func (s *Sampler) preferred() Method {
	if s.prefer != MethodAuto {
		return s.prefer
	}
	if s.caps.CrossTimestamping {
		return MethodPrecise
	}
	return MethodExtended
}

// order is the preferred method and every worse one after it.
func (s *Sampler) order() []Method {
	all := []Method{MethodPrecise, MethodExtended, MethodBasic}
	p := s.preferred()
	for i, m := range all {
		if m == p {
			return all[i:]
		}
	}
	return all
}

// direct takes one reading with method m against sys, or says why it cannot.
func (s *Sampler) direct(m Method, sys timebase.Domain, clk timebase.SystemClock, r *Reading) error {
	key := refusalKey{m, sys}
	if err := s.refused[key]; err != nil {
		return err
	}
	var err error
	switch m {
	case MethodPrecise:
		if !s.caps.CrossTimestamping {
			err = fmt.Errorf("no cross-timestamping: %w", ErrMethodUnsupported)
			break
		}
		if sys == timebase.DomainMonotonic {
			err = fmt.Errorf("cross-timestamps give realtime and monotonic_raw only: %w", ErrMethodUnsupported)
			break
		}
		s.prec = unix.PtpSysOffsetPrecise{}
		if err = s.dev.sysOffsetPrecise(&s.prec); err == nil && !fromPrecise(&s.prec, sys, r) {
			err = errors.New("PTP_SYS_OFFSET_PRECISE: unusable result")
		}
	case MethodExtended:
		s.ext.Samples = uint32(s.samples)
		s.ext.Clockid = clk.ID()
		s.ext.Rsv = [2]uint32{}
		if err = s.dev.sysOffsetExtended(&s.ext); err == nil {
			if s.ext.Clockid != clk.ID() {
				err = fmt.Errorf("kernel answered for clock id %d: %w", s.ext.Clockid, ErrMethodUnsupported)
			} else if !bestExtended(&s.ext, sys, r) {
				err = errors.New("PTP_SYS_OFFSET_EXTENDED: no usable sample")
			}
		}
	case MethodBasic:
		if sys != timebase.DomainRealtime {
			err = fmt.Errorf("reads against realtime only: %w", ErrMethodUnsupported)
			break
		}
		s.basic.Samples = uint32(s.samples)
		s.basic.Rsv = [3]uint32{}
		if err = s.dev.sysOffset(&s.basic); err == nil && !bestBasic(&s.basic, r) {
			err = errors.New("PTP_SYS_OFFSET: no usable sample")
		}
	}
	if errors.Is(err, ErrMethodUnsupported) {
		s.refused[key] = err
	}
	return err
}

// bracket moves a REALTIME reading to clock clk: read clk, REALTIME, clk, and use
// the middle of the bracket as the REALTIME->clk offset.
func (s *Sampler) bracket(clk timebase.SystemClock, r *Reading) error {
	a, err := s.readSys(clk)
	if err != nil {
		return err
	}
	rt, err := s.readSys(timebase.Realtime)
	if err != nil {
		return err
	}
	b, err := s.readSys(clk)
	if err != nil {
		return err
	}
	w := b - a
	r.SysNS += a + w/2 - rt
	r.SysDomain = clk.Domain()
	r.OffsetNS = r.SysNS - r.PHCNS
	r.DelayNS += w
	r.BracketNS = w
	return nil
}

// classify turns an ioctl errno into ErrMethodUnsupported where it means "this
// kernel or driver does not do that".
func classify(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%s: %w (%w)", what, ErrMethodUnsupported, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func capsFromKernel(c *unix.PtpClockCaps) Caps {
	return Caps{
		MaxAdjPPB:         int64(c.Max_adj),
		Alarms:            int(c.N_alarm),
		ExtTS:             int(c.N_ext_ts),
		PerOut:            int(c.N_per_out),
		PPS:               c.Pps != 0,
		Pins:              int(c.N_pins),
		CrossTimestamping: c.Cross_timestamping != 0,
		AdjustPhase:       c.Adjust_phase != 0,
		MaxPhaseAdjNS:     int64(c.Max_phase_adj),
	}
}
