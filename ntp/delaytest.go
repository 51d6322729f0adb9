package ntp

import "math"

// DelayTest flags samples whose round-trip delay rose far above the recent
// minimum, as chronyd's maxdelaydevratio test does: a sample is an outlier when
// (delay - min) > Ratio * spread, where min is the smallest delay of the last
// delayWindow samples and spread the standard deviation of the non-outlier
// delays among them (at least FloorNS). A delay that rose for good (a new
// route) stops being flagged once it fills the window, so the test can't lock
// a server out. The zero value is ready with chronyd's default ratio of 10.
type DelayTest struct {
	Ratio   float64 // default 10 (chronyd's maxdelaydevratio); negative turns the test off
	FloorNS float64 // smallest spread assumed (default 100 ns: software timestamp jitter)

	delays  [delayWindow]int64
	flagged [delayWindow]bool
	n, next int
}

// delayWindow is how many recent delays the test looks at.
const delayWindow = 16

// minDelayTestSamples is how many plain samples the test needs before it flags.
const minDelayTestSamples = 4

// Check records delay and reports whether it is an outlier against the
// samples before it.
func (d *DelayTest) Check(delay int64) bool {
	ratio, floor := d.Ratio, d.FloorNS
	if ratio == 0 {
		ratio = 10
	}
	if floor <= 0 {
		floor = 100
	}
	out := false
	if ratio > 0 {
		minD := int64(math.MaxInt64)
		var sum, sq float64
		k := 0
		for i := 0; i < d.n; i++ {
			minD = min(minD, d.delays[i])
			if !d.flagged[i] {
				k++
				sum += float64(d.delays[i])
			}
		}
		if k >= minDelayTestSamples {
			mean := sum / float64(k)
			for i := 0; i < d.n; i++ {
				if !d.flagged[i] {
					sq += (float64(d.delays[i]) - mean) * (float64(d.delays[i]) - mean)
				}
			}
			spread := max(math.Sqrt(sq/float64(k-1)), floor)
			out = float64(delay-minD) > ratio*spread
		}
	}
	d.delays[d.next], d.flagged[d.next] = delay, out
	d.next = (d.next + 1) % delayWindow
	d.n = min(d.n+1, delayWindow)
	return out
}
