package phc

import (
	"fmt"
	"math"
	"strconv"

	"github.com/monagent/monagent/timebase"
)

// Verdict is what a StepDetector made of a reading.
type Verdict uint8

// Verdicts.
const (
	// VerdictFirst: nothing to judge against (the first reading, or the first
	// after Forget).
	VerdictFirst Verdict = iota
	// VerdictAdvancing: the PHC moved as its last interval predicts, within
	// the bound.
	VerdictAdvancing
	// VerdictStopped: the PHC did not move, within the bound, while the
	// reference moved at least a millisecond (ErrNotAdvancing).
	VerdictStopped
	// VerdictStepped: the PHC moved further from the prediction than the
	// bound allows.
	VerdictStepped
)

var verdictNames = [...]string{"first", "advancing", "stopped", "stepped"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Judgement is a StepDetector's verdict on one reading with the figures
// behind it. Times are in ns; AdvanceNS and PredictedNS count in the PHC's
// time, ElapsedNS in the reference clock's.
type Judgement struct {
	Verdict     Verdict
	ElapsedNS   int64 // reference time since the previous reading
	AdvanceNS   int64 // PHC time since the previous reading (after - before)
	PredictedNS int64 // the advance the last interval's rate predicts
	// StepNS is AdvanceNS - PredictedNS: positive when the PHC jumped ahead.
	// It is a step when its size exceeds BoundNS.
	StepNS  int64
	BoundNS int64
	// The PHC times of the previous reading and of this one.
	PHCBeforeNS, PHCAfterNS int64
}

// Err is ErrNotAdvancing with the figures for a stopped PHC judged against
// the clock ref, else nil.
func (j Judgement) Err(ref timebase.Domain) error {
	if j.Verdict != VerdictStopped {
		return nil
	}
	return fmt.Errorf("%w: it moved %d ns while %s moved %d ns (stopped, or stepped back by as much)", ErrNotAdvancing, j.AdvanceNS, ref, j.ElapsedNS)
}

// StepDetector judges successive readings of one PHC against a reference
// clock that nobody steps or slews (MONOTONIC_RAW): the PHC should advance
// as far as the reference did, times the rate it ran at over the previous
// interval. A reading further from that prediction than
//
//	ThresholdNS + MaxSlewPPB·elapsed + both readings' read windows + the rate's own uncertainty·elapsed
//
// is a step (VerdictStepped); one that barely moved while the reference
// moved a millisecond or more is a stopped PHC (VerdictStopped). MaxSlewPPB
// is how far a servo (ptp4l, phc2sys) may change the PHC's rate from one
// interval to the next without being taken for a step; ThresholdNS is the
// smallest jump beyond that which counts.
//
// The prediction uses the rate over the previous interval, not a fit over
// many readings: a fit lags when a servo changes the PHC's frequency, by
// far more than one interval's change. A step leaves the rate as it was (a
// clock steps, its oscillator does not change); a stopped PHC forgets it.
//
// The zero value judges with a zero threshold and slew; it is not safe for
// concurrent use.
type StepDetector struct {
	ThresholdNS int64
	MaxSlewPPB  int64

	have              bool
	refNS, phcNS, win int64   // the previous reading
	rate              float64 // PHC advance per reference ns, minus 1
	rateErr           float64 // the rate's uncertainty (read windows over the interval)
	haveRate          bool
}

// Judge judges a reading taken at reference time refNS (the middle of a read
// window windowNS wide) that found the PHC at phcNS, and makes it the
// reading the next one is judged against, whatever the verdict.
func (d *StepDetector) Judge(refNS, phcNS, windowNS int64) Judgement {
	if !d.have {
		d.have, d.refNS, d.phcNS, d.win = true, refNS, phcNS, windowNS
		return Judgement{Verdict: VerdictFirst, PHCAfterNS: phcNS}
	}
	e := refNS - d.refNS
	j := Judgement{ElapsedNS: e, AdvanceNS: phcNS - d.phcNS, PredictedNS: e, PHCBeforeNS: d.phcNS, PHCAfterNS: phcNS}
	ae := math.Abs(float64(e))
	bound := float64(d.ThresholdNS) + float64(d.MaxSlewPPB)*1e-9*ae + float64(max(d.win, 0)+max(windowNS, 0))
	if d.haveRate {
		j.PredictedNS += int64(math.Round(d.rate * float64(e)))
		bound += d.rateErr * ae
	}
	j.BoundNS = int64(math.Ceil(bound))
	j.StepNS = j.AdvanceNS - j.PredictedNS
	switch {
	case e >= 1_000_000 && j.AdvanceNS < e/2 && max(j.AdvanceNS, -j.AdvanceNS) <= j.BoundNS:
		j.Verdict = VerdictStopped
		d.haveRate = false
	case max(j.StepNS, -j.StepNS) > j.BoundNS:
		j.Verdict = VerdictStepped
	default:
		j.Verdict = VerdictAdvancing
		d.learnRate(e, j.AdvanceNS, windowNS)
	}
	d.refNS, d.phcNS, d.win = refNS, phcNS, windowNS
	return j
}

// learnRate keeps the PHC's rate over an interval that showed it advancing,
// unless the read windows make it vaguer than the slew allowed anyway.
func (d *StepDetector) learnRate(elapsed, advance, window int64) {
	if elapsed <= 0 {
		return
	}
	e := float64(elapsed)
	errRate := float64(max(d.win, 0)+max(window, 0)) / e
	if errRate > float64(d.MaxSlewPPB)*1e-9 {
		d.haveRate = false
		return
	}
	d.rate, d.rateErr, d.haveRate = float64(advance-elapsed)/e, errRate, true
}

// Forget drops the previous reading and the rate: the next reading is
// judged against nothing (after the device was reopened, say).
func (d *StepDetector) Forget() {
	d.have, d.haveRate = false, false
}
