package timeapi

import (
	"errors"
	"fmt"
)

// Layout of version 1 (docs/timeapi.md has the table).
const (
	Magic         = 0x454D4954414E4F4D // the bytes "MONATIME" as a little-endian uint64
	LayoutVersion = 1
	HeaderSize    = 64
	SectionSize   = 256
	SegmentSize   = 4096
	MaxSections   = (SegmentSize - HeaderSize) / SectionSize // 15
	MaxNameLen    = 15                                       // a name is NUL-padded in 16 bytes
)

// Header field offsets.
const (
	offMagic        = 0  // uint64
	offVersion      = 8  // uint32
	offHeaderSize   = 12 // uint32
	offSegmentSize  = 16 // uint32
	offSectionSize  = 20 // uint32
	offSectionCount = 24 // uint32
	offEpoch        = 28 // uint32, odd while the header is (re)initialised
	offWriterPID    = 32 // uint32
)

// Section field offsets, from the start of a section.
const (
	offName         = 0  // [16]byte
	offSeq          = 16 // uint32, odd while written
	offState        = 20 // uint32
	offBaseNS       = 24 // int64
	offTrueNS       = 32
	offRatePPB      = 40
	offBoundNS      = 48
	offGrowthPPB    = 56
	offVoidNS       = 64
	offRealtimeNS   = 72
	offUpdates      = 80 // uint64
	offRTStepFromNS = 88 // int64: the REALTIME step last seen by the writer was after this base time
	offRTStepToNS   = 96 // int64: ... and at or before this one (0: none seen)
	offRTStepNS     = 104
	sectionUsed     = 112 // the rest of the section is reserved (zero)
)

// Limits a reader checks a model against (anything outside is ErrMalformed).
const (
	MaxRatePPB   = 100_000_000   // 10 %
	MaxGrowthPPB = 1_000_000_000 // 100 %
	MaxBoundNS   = 1 << 50       // about 13 days
)

// State is a published clock's judged state; the numbers are judge.State's.
type State uint32

const (
	Unknown  State = iota // no judged sample yet (reads fail with ErrNotInitialised)
	Locked                // the clock follows its references
	Holdover              // lost its references; the bound grows
	Freerun               // anything else
)

var stateNames = [...]string{"UNKNOWN", "LOCKED", "HOLDOVER", "FREERUN"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint32(s))
}

// Model is one section's content as the writer publishes it.
type Model struct {
	State      State
	BaseNS     int64 // CLOCK_MONOTONIC_RAW reading the model is anchored at
	TrueNS     int64 // the true time (UTC ns for "system"; global-timeline ns for "global") at BaseNS: the interval's centre
	RatePPB    int64 // true time runs at (1 + RatePPB·1e-9) × the base clock from BaseNS
	BoundNS    int64 // half-width at BaseNS
	GrowthPPB  int64 // the half-width grows by GrowthPPB·1e-9 × |base − BaseNS|
	VoidNS     int64 // base-clock time at/after which the section is void (reads fail)
	RealtimeNS int64 // CLOCK_REALTIME read at BaseNS (lets Past convert a REALTIME stamp)
}

// Interval is a true time with its bound: the truth is in [EarliestNS, LatestNS].
type Interval struct {
	EarliestNS, LatestNS int64
	State                State
}

// MidNS is the interval's centre: the best estimate of the true time.
func (iv Interval) MidNS() int64 { return iv.EarliestNS + (iv.LatestNS-iv.EarliestNS)/2 }

// HalfWidthNS is the interval's half-width, rounded up: the bound on
// |MidNS − truth|.
func (iv Interval) HalfWidthNS() int64 { return (iv.LatestNS - iv.EarliestNS + 1) / 2 }

// Base is the clock a stamp given to Past was taken on.
type Base int

const (
	Realtime Base = iota
	Monotonic
	MonotonicRaw
)

var baseNames = [...]string{"REALTIME", "MONOTONIC", "MONOTONIC_RAW"}

func (b Base) String() string {
	if b >= 0 && int(b) < len(baseNames) {
		return baseNames[b]
	}
	return fmt.Sprintf("Base(%d)", int(b))
}

// The errors of a read; test them with errors.Is. The C and Python readers have
// the same ones (docs/timeapi.md).
var (
	ErrNotInitialised = errors.New("time segment not initialised") // header (re)initialising, or the clock has no judged sample yet
	ErrMalformed      = errors.New("time segment malformed")       // wrong magic, sizes or a model out of range
	ErrVersion        = errors.New("time segment layout version unsupported")
	ErrInconsistent   = errors.New("time segment read inconsistent") // seqlock retries exhausted
	ErrVoid           = errors.New("time section void")              // the writer stopped updating it
	ErrUnknownClock   = errors.New("time segment has no such clock")
	ErrStepped        = errors.New("REALTIME stepped around the stamp") // Past cannot tell which side of a step the stamp is on
)

// Codes are the numbers the C reader returns for the errors (negated).
const (
	CodeOK = iota
	CodeNotInitialised
	CodeMalformed
	CodeVersion
	CodeInconsistent
	CodeVoid
	CodeUnknownClock
	CodeStepped
	CodeSystem // a system call failed (errno in the C reader)
)
