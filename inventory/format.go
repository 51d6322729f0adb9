package inventory

import (
	"fmt"
	"strings"
	"time"
)

// fmtOffset prints a signed time difference: +1.234 µs, -12.5 ms, -37.000000123 s.
func fmtOffset(ns int64) string {
	switch {
	case ns > 0:
		return "+" + fmtNS(uint64(ns))
	case ns < 0:
		return "-" + fmtNS(-uint64(ns))
	}
	return "0 ns"
}

// fmtDuration prints a length of time: 850 ns, 1.52 µs.
func fmtDuration(ns int64) string {
	if ns < 0 {
		return fmtOffset(ns)
	}
	return fmtNS(uint64(ns))
}

// fmtNS picks the unit: ns, µs and ms to three decimals, seconds exact, and
// from a minute on [N d ]HH:MM:SS.fffffffff.
func fmtNS(u uint64) string {
	switch {
	case u < 1e3:
		return fmt.Sprintf("%d ns", u)
	case u < 1e6:
		return decimals(u, 3) + " µs"
	case (u+500)/1e3 < 1e6:
		return decimals((u+500)/1e3, 3) + " ms"
	case u < 60e9:
		return decimals(u, 9) + " s"
	}
	const day, hour, minute = 86400e9, 3600e9, 60e9
	sec := decimals(u%minute, 9)
	if u%minute < 10e9 {
		sec = "0" + sec
	}
	s := fmt.Sprintf("%02d:%02d:%s", u%day/hour, u%hour/minute, sec)
	if u >= day {
		s = fmt.Sprintf("%d d %s", u/day, s)
	}
	return s
}

// decimals prints q / 10^digits with the trailing zeros of the fraction dropped.
func decimals(q uint64, digits int) string {
	p := uint64(1)
	for range digits {
		p *= 10
	}
	s := fmt.Sprintf("%d.%0*d", q/p, digits, q%p)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// fmtDate prints an absolute time counted from the Unix epoch in the named
// timescale (UTC for REALTIME, TAI for CLOCK_TAI).
func fmtDate(ns int64, scale string) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000000") + " " + scale
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
