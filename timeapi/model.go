package timeapi

import "fmt"

// The model's arithmetic: integer nanoseconds and parts per billion, no float,
// no overflow for the ranges a reader accepts (MaxRatePPB, MaxGrowthPPB,
// MaxBoundNS and ages up to maxAgeNS).

const (
	// maxAgeNS is the farthest from BaseNS a model is evaluated (about 52
	// days); farther is ErrVoid.
	maxAgeNS = 1 << 52
	// maxTimeNS bounds BaseNS and TrueNS (year 2116 in UTC ns), so no sum
	// overflows.
	maxTimeNS = 1 << 62
	// SlewPPB is the most CLOCK_REALTIME and CLOCK_MONOTONIC may run apart
	// from CLOCK_MONOTONIC_RAW: the kernel's limit on the NTP frequency
	// (MAXFREQ, 500 ppm). Past adds SlewPPB × the stamp's age to convert a
	// REALTIME or MONOTONIC stamp to the base clock.
	SlewPPB = 500_000
	// StepSlackNS is how far the REALTIME − MONOTONIC_RAW relation may move
	// between two reads (beyond SlewPPB) before it counts as a step.
	StepSlackNS = 100_000
)

// mulPPB returns d·ppb/1e9 rounded toward zero; |d| ≤ maxAgeNS, |ppb| ≤ 1e9.
// Within about a minute of the model (|d| < 2^33, |ppb| < 2^30) the product
// fits in int64 and one division does.
func mulPPB(d, ppb int64) int64 {
	if d > -1<<33 && d < 1<<33 && ppb > -1<<30 && ppb < 1<<30 {
		return d * ppb / 1_000_000_000
	}
	q, r := d/1_000_000_000, d%1_000_000_000
	return q*ppb + r*ppb/1_000_000_000
}

// growNS returns ⌈|d|·ppb/1e9⌉ for 0 ≤ ppb ≤ 1e9; |d| ≤ maxAgeNS.
func growNS(d, ppb int64) int64 {
	if d < 0 {
		d = -d
	}
	if d < 1<<33 && ppb < 1<<30 {
		return (d*ppb + 999_999_999) / 1_000_000_000
	}
	q, r := d/1_000_000_000, d%1_000_000_000
	x := r * ppb
	g := q*ppb + x/1_000_000_000
	if x%1_000_000_000 != 0 {
		g++
	}
	return g
}

// Validate names the first field of a model that readers would refuse as
// ErrMalformed (Publish does not check: it neither fails nor allocates).
func (m Model) Validate() error {
	switch {
	case m.State > Freerun:
		return fmt.Errorf("state %v: %w", m.State, ErrMalformed)
	case m.BaseNS < 0 || m.BaseNS > maxTimeNS:
		return fmt.Errorf("base %d ns outside [0, 2^62]: %w", m.BaseNS, ErrMalformed)
	case m.TrueNS < -maxTimeNS || m.TrueNS > maxTimeNS:
		return fmt.Errorf("true time %d ns outside ±2^62: %w", m.TrueNS, ErrMalformed)
	case m.RealtimeNS < -maxTimeNS || m.RealtimeNS > maxTimeNS:
		return fmt.Errorf("REALTIME %d ns outside ±2^62: %w", m.RealtimeNS, ErrMalformed)
	case m.RatePPB < -MaxRatePPB || m.RatePPB > MaxRatePPB:
		return fmt.Errorf("rate %d ppb outside ±%d: %w", m.RatePPB, MaxRatePPB, ErrMalformed)
	case m.GrowthPPB < 0 || m.GrowthPPB > MaxGrowthPPB:
		return fmt.Errorf("growth %d ppb outside [0, %d]: %w", m.GrowthPPB, MaxGrowthPPB, ErrMalformed)
	case m.BoundNS < 0 || m.BoundNS > MaxBoundNS:
		return fmt.Errorf("bound %d ns outside [0, 2^50]: %w", m.BoundNS, ErrMalformed)
	}
	return nil
}

// valid reports whether a model is in the ranges a reader accepts.
func (m *Model) valid() bool {
	return m.State <= Freerun && m.BaseNS >= 0 && m.BaseNS <= maxTimeNS &&
		m.TrueNS >= -maxTimeNS && m.TrueNS <= maxTimeNS &&
		m.RealtimeNS >= -maxTimeNS && m.RealtimeNS <= maxTimeNS &&
		m.RatePPB >= -MaxRatePPB && m.RatePPB <= MaxRatePPB &&
		m.GrowthPPB >= 0 && m.GrowthPPB <= MaxGrowthPPB &&
		m.BoundNS >= 0 && m.BoundNS <= MaxBoundNS
}

// at evaluates a valid model at base-clock time base, widening the half-width
// by extraNS (≥ 0): the interval
//
//	centre = TrueNS + d + ⌊d·RatePPB/1e9⌋,  d = base − BaseNS
//	half   = BoundNS + ⌈|d|·GrowthPPB/1e9⌉ + 1 + extraNS
//
// (the 1 ns covers the centre's rounding). It fails with ErrVoid at or after
// VoidNS and farther than maxAgeNS from BaseNS.
func (m *Model) at(base, extraNS int64) (Interval, error) {
	if base >= m.VoidNS {
		return Interval{}, ErrVoid
	}
	d := base - m.BaseNS
	if d > maxAgeNS || d < -maxAgeNS {
		return Interval{}, ErrVoid
	}
	centre := m.TrueNS + d + mulPPB(d, m.RatePPB)
	half := m.BoundNS + growNS(d, m.GrowthPPB) + 1 + extraNS
	return Interval{EarliestNS: centre - half, LatestNS: centre + half, State: m.State}, nil
}
