package phc

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/monagent/monagent/timebase"
)

// Method is how a PHC<->system offset was measured.
type Method uint8

// Methods, best first.
const (
	MethodAuto     Method = iota // choose the best the device supports
	MethodPrecise                // PTP_SYS_OFFSET_PRECISE: hardware cross-timestamp, no read window
	MethodExtended               // PTP_SYS_OFFSET_EXTENDED: system reads bracket each PHC read
	MethodBasic                  // PTP_SYS_OFFSET: alternating REALTIME and PHC reads
)

var methodNames = [...]string{"auto", "precise", "extended", "basic"}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return "method(" + strconv.Itoa(int(m)) + ")"
}

// ParseMethod is the inverse of Method.String.
func ParseMethod(s string) (Method, error) {
	for i, n := range methodNames {
		if s == n {
			return Method(i), nil
		}
	}
	return 0, errors.New("unknown PHC read method " + strconv.Quote(s) + " (want auto, precise, extended or basic)")
}

// ReadsAgainst says whether a PHC is read against the system clock d:
// REALTIME, MONOTONIC or MONOTONIC_RAW (the clocks PTP_SYS_OFFSET_EXTENDED
// takes), not TAI or BOOTTIME.
func ReadsAgainst(d timebase.Domain) bool {
	return d == timebase.DomainRealtime || d == timebase.DomainMonotonic || d == timebase.DomainMonotonicRaw
}

// Reading is one PHC<->system clock offset measurement.
type Reading struct {
	SysNS     int64           // system clock at the middle of the read window
	PHCNS     int64           // PHC time
	SysDomain timebase.Domain // the system clock SysNS counts in
	OffsetNS  int64           // SysNS - PHCNS, the sign phc2sys reports
	DelayNS   int64           // width of the read window (0 for a cross-timestamp)
	Samples   int             // reads the best one was chosen from
	Method    Method
	// BracketNS is non-zero when the kernel could not read against SysDomain
	// directly and the reading was moved there from REALTIME with a bracketed
	// clock read; it is that bracket's width and is included in DelayNS.
	BracketNS int64
}

// Sample returns the reading as a timebase sample (local = system, ref = PHC).
func (r Reading) Sample() timebase.Sample {
	return timebase.Sample{Local: r.SysNS, Ref: r.PHCNS, DelayNS: r.DelayNS}
}

// Caps are a PHC's capabilities (struct ptp_clock_caps).
type Caps struct {
	MaxAdjPPB         int64 // largest frequency adjustment
	Alarms            int
	ExtTS             int // external timestamp channels
	PerOut            int // periodic outputs
	PPS               bool
	Pins              int // programmable pins
	CrossTimestamping bool
	AdjustPhase       bool
	MaxPhaseAdjNS     int64
}

// Pin is one programmable pin of a PHC (struct ptp_pin_desc).
type Pin struct {
	Name    string
	Index   int
	Func    PinFunc
	Channel int
}

// PinFunc is what a pin is assigned to.
type PinFunc uint32

// Pin functions (PTP_PF_*).
const (
	PinNone PinFunc = iota
	PinExtTS
	PinPerOut
	PinPhySync
)

var pinFuncNames = [...]string{PinNone: "none", PinExtTS: "extts", PinPerOut: "perout", PinPhySync: "physync"}

func (f PinFunc) String() string {
	if f < PinFunc(len(pinFuncNames)) {
		return pinFuncNames[f]
	}
	return "pinfunc(" + strconv.Itoa(int(f)) + ")"
}

// ErrMethodUnsupported wraps the kernel's refusal of one read method (EOPNOTSUPP,
// ENOTTY, EINVAL for an unknown clock id); the sampler then tries the next one.
var ErrMethodUnsupported = errors.New("read method not supported by this PHC or kernel")

// MaxSamples is the most reads one PTP_SYS_OFFSET(_EXTENDED) call takes
// (PTP_MAX_SAMPLES of the uapi).
const MaxSamples = 25

// ErrNotAdvancing marks a PHC whose time did not move on between two readings
// while the system clock did: a stopped or broken clock (QEMU's e1000e, a
// CPTS whose driver never started it), or one stepped back in between.
var ErrNotAdvancing = errors.New("PHC is not advancing")

// CheckAdvancing compares two readings of one PHC against one system clock,
// prev taken before cur. A running PHC, however it is steered, moves within
// its maximum frequency adjustment (at most a few parts per thousand) of the
// system clock; one that moved less than half as far is stopped, or was
// stepped back, and its readings must not feed a clock model. Readings less
// than 1 ms apart, or against different clocks, are not judged. REALTIME
// can itself be stepped: judge against a clock that never is (Elapsed).
func CheckAdvancing(prev, cur Reading) error {
	if prev.SysDomain != cur.SysDomain {
		return nil
	}
	return CheckElapsed(cur.PHCNS-prev.PHCNS, cur.SysNS-prev.SysNS, cur.SysDomain)
}

// CheckElapsed judges a PHC that moved dphc while clock, one nobody steps
// (MONOTONIC_RAW), moved elapsed; see CheckAdvancing.
func CheckElapsed(dphc, elapsed int64, clock timebase.Domain) error {
	if elapsed < 1_000_000 {
		return nil
	}
	if dphc < elapsed/2 {
		return fmt.Errorf("%w: it moved %d ns while %s moved %d ns (stopped, or stepped back)", ErrNotAdvancing, dphc, clock, elapsed)
	}
	return nil
}
