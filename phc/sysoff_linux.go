package phc

import (
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

func clockTimeNS(t unix.PtpClockTime) int64 { return t.Sec*1_000_000_000 + int64(t.Nsec) }

// bestExtended picks the sample with the narrowest read window from a
// PTP_SYS_OFFSET_EXTENDED result (ts[i] = {sys before, phc, sys after}) and
// places the system time at the middle of that window, as ptp4l's sysoff.c does.
func bestExtended(x *unix.PtpSysOffsetExtended, sys timebase.Domain, r *Reading) bool {
	n := int(x.Samples)
	if n <= 0 || n > len(x.Ts) {
		return false
	}
	best := int64(-1)
	for i := 0; i < n; i++ {
		keepNarrowest(&best, r, &x.Ts[i][0], &x.Ts[i][1], &x.Ts[i][2], sys, MethodExtended)
	}
	return finish(best, r, n)
}

// bestBasic does the same for PTP_SYS_OFFSET: ts = sys, phc, sys, phc, ..., sys
// (2n+1 entries, system clock REALTIME).
func bestBasic(x *unix.PtpSysOffset, r *Reading) bool {
	n := int(x.Samples)
	if n <= 0 || 2*n+1 > len(x.Ts) {
		return false
	}
	best := int64(-1)
	for i := 0; i < n; i++ {
		keepNarrowest(&best, r, &x.Ts[2*i], &x.Ts[2*i+1], &x.Ts[2*i+2], timebase.DomainRealtime, MethodBasic)
	}
	return finish(best, r, n)
}

// keepNarrowest replaces *r with the read (sys before, phc, sys after) when its
// window is narrower than *best. A negative window (the system clock stepped
// inside the read) is never used.
func keepNarrowest(best *int64, r *Reading, before, phcT, after *unix.PtpClockTime, sys timebase.Domain, m Method) {
	t1, tp, t2 := clockTimeNS(*before), clockTimeNS(*phcT), clockTimeNS(*after)
	d := t2 - t1
	if d < 0 || (*best >= 0 && d >= *best) {
		return
	}
	*best = d
	*r = Reading{SysNS: t1 + d/2, PHCNS: tp, SysDomain: sys, DelayNS: d, Method: m}
}

func finish(best int64, r *Reading, n int) bool {
	if best < 0 {
		return false
	}
	r.OffsetNS = r.SysNS - r.PHCNS
	r.Samples = n
	return true
}

// fromPrecise reads a PTP_SYS_OFFSET_PRECISE cross-timestamp against REALTIME or
// MONOTONIC_RAW (the kernel returns both at once).
func fromPrecise(x *unix.PtpSysOffsetPrecise, sys timebase.Domain, r *Reading) bool {
	var s int64
	switch sys {
	case timebase.DomainRealtime:
		s = clockTimeNS(x.Realtime)
	case timebase.DomainMonotonicRaw:
		s = clockTimeNS(x.Monoraw)
	default:
		return false
	}
	p := clockTimeNS(x.Device)
	*r = Reading{SysNS: s, PHCNS: p, SysDomain: sys, OffsetNS: s - p, Samples: 1, Method: MethodPrecise}
	return true
}
