package judge

import "math"

// The error bound of a judged clock is the largest error it can have
// against its reference given what was measured: every formula here is
// |offset| (what the clock is known to be off) plus what the measurement
// cannot see. All in ns, saturating at math.MaxInt64; docs/schema.md lists
// them with their sources.

// Daemon is the bound of a clock a time daemon disciplines, from the
// daemon's own report: |offset| + root dispersion + ½ root delay. This is
// chrony's "maximum clock error" (chrony FAQ, and chrony_exporter's rule)
// and ntpd's, the root distance of RFC 5905 §11.2 (λ = δ/2 + ε) added to
// the offset still to be corrected.
func Daemon(offsetNS, rootDelayNS, rootDispersionNS int64) int64 {
	return Sum(Abs(offsetNS), pos(rootDispersionNS), pos(rootDelayNS)/2)
}

// Exchange is the bound of a clock measured by one two-way exchange with a
// server (the own NTP probe, the own PTP probe's Sync/Delay_Req pair):
// whatever the path's asymmetry, the true offset lies within ½ the
// exchange's delay of the measured one (RFC 5905 §8: θ ± δ/2), the server
// is itself off its reference by up to its root distance (½ root delay +
// root dispersion; 0 for a grandmaster taken as truth), and each timestamp
// carries its own uncertainty (stampsNS, the sum of those of the four
// stamps, e.g. a software stamp's scheduling window).
func Exchange(offsetNS, delayNS, serverRootDelayNS, serverRootDispersionNS, stampsNS int64) int64 {
	return Sum(Abs(offsetNS), pos(delayNS)/2+pos(delayNS)%2, pos(serverRootDelayNS)/2, pos(serverRootDispersionNS), pos(stampsNS))
}

// PathDelay is Exchange for a servo that reports a mean path delay rather
// than an exchange's round trip (ptp4l: offsetFromMaster and
// meanPathDelay): the asymmetry error is at most the mean path delay
// itself (|d₁ − d₂|/2 ≤ (d₁ + d₂)/2 for d₁, d₂ ≥ 0).
func PathDelay(offsetNS, meanPathDelayNS, stampsNS int64) int64 {
	return Sum(Abs(offsetNS), pos(meanPathDelayNS), pos(stampsNS))
}

// Reading is the bound of a clock compared with another by reading both
// (a PHC against the system clock: PTP_SYS_OFFSET*): the other clock was
// read somewhere in a window around the reading, so the offset is known
// to within half of it.
func Reading(offsetNS, windowNS int64) int64 {
	w := pos(windowNS)
	return Sum(Abs(offsetNS), w/2+w%2)
}

// Sum composes bounds along a path (the system clock ← its PHC ← the PTP
// grandmaster): errors add. It saturates at math.MaxInt64.
func Sum(bounds ...int64) int64 {
	var s int64
	for _, b := range bounds {
		if b < 0 {
			b = 0
		}
		if b > math.MaxInt64-s {
			return math.MaxInt64
		}
		s += b
	}
	return s
}

// Abs is |v|, math.MaxInt64 for math.MinInt64.
func Abs(v int64) int64 {
	if v < 0 {
		if v == math.MinInt64 {
			return math.MaxInt64
		}
		return -v
	}
	return v
}

func pos(v int64) int64 { return max(v, 0) }

// FilteredDelay is the bound of a PTP slave's offset computed with a
// filtered mean path delay P (offset = t2 − t1 − P) rather than its own
// exchange's: the Sync's one-way delay lies between 0 and twice the mean
// delay D of its own Sync and Delay_Req pair, so the offset is off by at
// most max(|P|, |2D − P|).
func FilteredDelay(offsetNS, filteredNS, pairNS int64) int64 {
	d := pos(pairNS)
	return Sum(Abs(offsetNS), max(Abs(filteredNS), Abs(2*d-filteredNS)))
}
