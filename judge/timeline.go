package judge

import (
	"sync"
	"time"
)

// Instant is one moment on both of the judge's clocks: REALTIME, which
// dates records and labels, and a steady clock that no daemon steps
// (CLOCK_MONOTONIC), on which every duration the judge measures is taken
// (staleness, holdover, bound growth).
type Instant struct {
	RealNS int64
	MonoNS int64
}

// Step is a step of REALTIME against the steady clock that a Timeline saw:
// the offset REALTIME − steady moved from BeforeNS to AfterNS (StepNS) some
// time in the IntervalNS before AtNS (REALTIME, after the step).
type Step struct {
	AtNS, StepNS, BeforeNS, AfterNS, IntervalNS int64
}

// StepNS is how far REALTIME − steady must move between two readings to be
// a step. Both clocks run at the frequency the kernel's NTP adjustments
// give them, so their difference moves only when REALTIME is set
// (clock_settime, a daemon's step, ADJ_SETOFFSET) or the machine resumes
// from suspend; a reading pair's own jitter is far below 1 ms.
const StepNS = int64(time.Millisecond)

// LateNS is how long after a step of REALTIME a sample stamped before it
// can still arrive (a ring drained late, a poll's timeout): older stamps
// are placed by the offset after the step.
const LateNS = int64(time.Minute)

// Timeline places REALTIME times on the steady clock: a sample stamped in
// REALTIME (a kernel stamp, an NTP T4) gets the steady time it had. After a
// step of REALTIME a stamp may be on either side of it (an edge stamped
// before the step and read after it); of the placements by the offset
// before and after the last step, the latest that is not after the present
// is taken (one placed after the present is impossible; one placed by the
// old offset must lie within LateNS before the step was seen), and a stamp
// after the present on both is placed at the present. It is safe for
// concurrent use.
type Timeline struct {
	read func() Instant

	mu      sync.Mutex
	have    bool
	last    Instant // the latest reading
	off     int64   // REALTIME − steady since the last step
	prev    int64   // ... before it
	stepped bool
	stepAt  int64 // steady time of the reading that saw the last step
	steps   uint64
	pending []Step // steps seen and not yet taken (Steps)
}

// NewTimeline reads both clocks with read (virtual clocks in tests); nil
// reads the system's: REALTIME and CLOCK_MONOTONIC in one time.Now.
func NewTimeline(read func() Instant) *Timeline {
	if read == nil {
		base := time.Now()
		read = func() Instant {
			t := time.Now()
			return Instant{RealNS: t.UnixNano(), MonoNS: int64(t.Sub(base)) + 1} // never 0: 0 is "unset" in Sample
		}
	}
	return &Timeline{read: read}
}

// Now reads both clocks and notes a step of REALTIME since the last
// reading. Its REALTIME is the steady time plus the offset the Timeline
// holds (changed only by a step): a reading's own jitter (the two clocks
// are read one after the other) does not move labels and placements
// against each other.
func (tl *Timeline) Now() Instant {
	in := tl.read()
	tl.mu.Lock()
	in = tl.note(in)
	in.RealNS = in.MonoNS + tl.off
	tl.mu.Unlock()
	return in
}

// confirmReads is how many more readings a step must be confirmed by.
const confirmReads = 2

// note notes a step of REALTIME that in shows, and returns the reading to
// use. The two clocks are read one after the other: a reading interrupted
// between them (a preemption, an interrupt, an emulator's pause) shows
// their difference moved by as long as the interruption, which on a busy
// board or under emulation passes StepNS. So a reading that shows a step
// is read again: the step is taken once a fresh reading agrees with it,
// and a reading that agrees with the old offset shows it was jitter.
func (tl *Timeline) note(in Instant) Instant {
	off := in.RealNS - in.MonoNS
	switch {
	case !tl.have:
		tl.have, tl.off = true, off
	case off-tl.off > StepNS || tl.off-off > StepNS:
		for range confirmReads {
			again := tl.read()
			o := again.RealNS - again.MonoNS
			if o-tl.off <= StepNS && tl.off-o <= StepNS {
				return tl.keep(again) // the first reading was interrupted: no step
			}
			if o-off <= StepNS && off-o <= StepNS {
				break // confirmed
			}
			in, off = again, o // moved again: try to confirm this one
		}
		if len(tl.pending) < 64 { // Steps takes them every tick; beyond that they are counted only
			tl.pending = append(tl.pending, Step{AtNS: in.RealNS, StepNS: off - tl.off, BeforeNS: tl.off, AfterNS: off, IntervalNS: in.MonoNS - tl.last.MonoNS})
		}
		tl.prev, tl.off, tl.stepped, tl.stepAt = tl.off, off, true, in.MonoNS
		tl.steps++
	}
	return tl.keep(in)
}

// keep makes in the latest reading (when it is) and returns it.
func (tl *Timeline) keep(in Instant) Instant {
	if in.MonoNS > tl.last.MonoNS || !tl.have {
		tl.last = in
	}
	return in
}

// At is a REALTIME instant with its steady time, placed as the Timeline's
// doc says, read now.
func (tl *Timeline) At(realNS int64) Instant {
	now := tl.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return Instant{RealNS: realNS, MonoNS: tl.place(realNS, now.MonoNS)}
}

func (tl *Timeline) place(realNS, nowMono int64) int64 {
	m := realNS - tl.off
	if tl.stepped {
		if p := realNS - tl.prev; p <= nowMono && p >= tl.stepAt-LateNS && (m > nowMono || p > m) {
			m = p
		}
	}
	return min(m, nowMono)
}

// Steps takes the steps seen since the last call, and the count of all.
func (tl *Timeline) Steps() ([]Step, uint64) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	p := tl.pending
	tl.pending = nil
	return p, tl.steps
}
