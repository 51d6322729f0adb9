package timebase

import (
	"fmt"
	"math"
)

// Offset is one clock's offset from a reference clock, read between two
// reads of the reference (ReadOffset). Times are ns; MidNS counts in the
// reference's time.
type Offset struct {
	MidNS    int64 // the reference at the middle of the read window
	OffsetNS int64 // the clock minus the reference there
	WindowNS int64 // the read window: how far the offset can be off
}

// ReadOffset reads ref, clk, ref n times through read (SystemClock.Now, a
// scripted machine in tests) and keeps the narrowest window: a read that the
// scheduler preempted has a wide one and loses. A reference that went
// backwards in every read is an error.
func ReadOffset(read func(SystemClock) (int64, error), ref, clk SystemClock, n int) (Offset, error) {
	o := Offset{WindowNS: -1}
	for range n {
		a, err := read(ref)
		if err != nil {
			return Offset{}, err
		}
		c, err := read(clk)
		if err != nil {
			return Offset{}, err
		}
		b, err := read(ref)
		if err != nil {
			return Offset{}, err
		}
		if w := b - a; w >= 0 && (o.WindowNS < 0 || w < o.WindowNS) {
			o = Offset{MidNS: a + w/2, OffsetNS: c - (a + w/2), WindowNS: w}
		}
	}
	if o.WindowNS < 0 {
		return Offset{}, fmt.Errorf("%s went backwards in every read", ref.Domain())
	}
	return o, nil
}

// OffsetStep is a step OffsetSteps found: the offset moved StepNS further
// than the clock's last rate, the allowed slew and the read windows explain,
// from BeforeNS to AfterNS over IntervalNS of the reference.
type OffsetStep struct {
	StepNS, BeforeNS, AfterNS, IntervalNS int64
}

// OffsetSteps finds the steps of a clock (settimeofday, a daemon's step)
// in its successive offsets from a reference that nobody steps
// (MONOTONIC_RAW). An offset is a step when it lies further from what the
// rate over the previous interval predicts than
//
//	ThresholdNS + MaxSlewPPM·elapsed + both offsets' read windows
//
// The prediction uses the rate over the previous interval, not a fitted
// slope: a fit over many samples lags when a daemon changes its slew, and
// the read jitter in a one-interval rate (the windows) is far below any
// step threshold. A step leaves the rate as it was. Not safe for concurrent
// use.
type OffsetSteps struct {
	ThresholdNS int64
	MaxSlewPPM  float64

	have     bool
	prev     Offset
	rate     float64 // offset change per reference ns over the last interval
	haveRate bool
}

// Next judges offset o, read after the previous one, and makes it the one
// the next is judged against; ok says whether it is a step.
func (d *OffsetSteps) Next(o Offset) (OffsetStep, bool) {
	prev, had := d.prev, d.have
	d.have, d.prev = true, o
	if !had {
		return OffsetStep{}, false
	}
	elapsed, delta := o.MidNS-prev.MidNS, o.OffsetNS-prev.OffsetNS
	predicted := 0.0
	if d.haveRate {
		predicted = d.rate * float64(elapsed)
	}
	dev := float64(delta) - predicted
	allowed := float64(d.ThresholdNS) + d.MaxSlewPPM*1e-6*math.Abs(float64(elapsed)) + float64(o.WindowNS+prev.WindowNS)
	if math.Abs(dev) > allowed {
		return OffsetStep{StepNS: int64(math.Round(dev)), BeforeNS: prev.OffsetNS, AfterNS: o.OffsetNS, IntervalNS: elapsed}, true
	}
	if elapsed > 0 {
		d.rate, d.haveRate = float64(delta)/float64(elapsed), true
	}
	return OffsetStep{}, false
}
