// Package phctest is a scripted machine with a PTP hardware clock, for tests
// of the code that reads PHCs and keeps their clock models (the phc source,
// phc.StepDetector). Its clocks are exact, so the truth is known at every
// instant.
package phctest

import (
	"fmt"
	"math"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// Machine is a machine whose clocks move only when told: every clock read
// moves MONOTONIC_RAW on by ReadNS (the time a read takes), REALTIME is
// MONOTONIC_RAW plus RealtimeOffsetNS, and the PHC runs RatePPB fast against
// MONOTONIC_RAW (a servo changes RatePPB; -1e9 stops it) and jumps when a
// test adds to PHCNS. It reads like an open PHC with its sampler (Sample,
// Domain, Fallbacks, Refusals, Close) and like the system clocks (Read).
// Not safe for concurrent use.
type Machine struct {
	RawNS            int64
	RealtimeOffsetNS int64
	PHCNS            int64
	RatePPB          float64
	ReadNS           int64
	Dom              timebase.Domain
	frac             float64 // the PHC's phase below a nanosecond
}

// New is a machine booted 5000 s ago in 2023, whose PHC (/dev/ptp3) counts
// TAI and runs 20 ppm fast, with reads that take 700 ns.
func New() *Machine {
	return &Machine{
		RawNS: 5_000e9, RealtimeOffsetNS: 1_700_000_000e9, PHCNS: 1_700_000_037e9 + 123_456_789,
		RatePPB: 20_000, ReadNS: 700, Dom: timebase.PHC(3),
	}
}

// Advance moves MONOTONIC_RAW on by d ns and the PHC with it at its rate.
func (m *Machine) Advance(d int64) {
	x := float64(d)*m.RatePPB/1e9 + m.frac
	w := math.Floor(x)
	m.RawNS += d
	m.PHCNS += d + int64(w)
	m.frac = x - w
}

// Now is the time of system clock d (REALTIME or MONOTONIC_RAW) without a
// read taking any.
func (m *Machine) Now(d timebase.Domain) int64 {
	if d == timebase.DomainRealtime {
		return m.RawNS + m.RealtimeOffsetNS
	}
	return m.RawNS
}

// Read reads REALTIME or MONOTONIC_RAW, taking ReadNS.
func (m *Machine) Read(c timebase.SystemClock) (int64, error) {
	m.Advance(m.ReadNS)
	switch c {
	case timebase.MonotonicRaw, timebase.Realtime:
		return m.Now(c.Domain()), nil
	}
	return 0, fmt.Errorf("phctest: the machine has no %s", c.Domain())
}

// Sample reads the PHC between two reads of sys (REALTIME or MONOTONIC_RAW)
// as PTP_SYS_OFFSET_EXTENDED would with one sample: the PHC read is at the
// exact middle of the window.
func (m *Machine) Sample(sys timebase.Domain, r *phc.Reading) error {
	if sys != timebase.DomainRealtime && sys != timebase.DomainMonotonicRaw {
		return fmt.Errorf("phctest: no reading against %s: %w", sys, phc.ErrMethodUnsupported)
	}
	m.Advance(m.ReadNS)
	t1 := m.Now(sys)
	m.Advance(m.ReadNS)
	at := m.PHCNS
	m.Advance(m.ReadNS)
	t2 := m.Now(sys)
	mid := t1 + (t2-t1)/2
	*r = phc.Reading{SysNS: mid, PHCNS: at, SysDomain: sys, OffsetNS: mid - at, DelayNS: t2 - t1, Samples: 1, Method: phc.MethodExtended}
	return nil
}

// Domain is the PHC's clock domain.
func (m *Machine) Domain() timebase.Domain { return m.Dom }

// Fallbacks is always 0: the machine reads with one method.
func (m *Machine) Fallbacks() uint64 { return 0 }

// Refusals is always empty.
func (m *Machine) Refusals() []string { return nil }

// Close does nothing: the machine can be read again.
func (m *Machine) Close() error { return nil }
