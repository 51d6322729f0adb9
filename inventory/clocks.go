package inventory

import (
	"github.com/monagent/monagent/timebase"
)

// ClockProbe describes one system clock. NowNS counts in the clock's own
// domain: since the epoch for realtime (UTC) and tai, since boot for the
// monotonic family.
type ClockProbe struct {
	Name         string `json:"name"`
	ResolutionNS int64  `json:"resolution_ns"`
	NowNS        int64  `json:"now_ns"`
	OffsetNS     int64  `json:"offset_from_monotonic_raw_ns"`
	Error        string `json:"error,omitempty"`
}

// KernelProbe is the adjtimex state.
type KernelProbe struct {
	State      string `json:"state"`
	Status     string `json:"status"`
	Synced     bool   `json:"synced"`
	OffsetNS   int64  `json:"offset_ns"`
	FreqPPB    int64  `json:"freq_ppb"`
	MaxErrorNS int64  `json:"maxerror_ns"`
	EstErrorNS int64  `json:"esterror_ns"`
	TAIOffsetS int64  `json:"tai_offset_s"`
	TAINote    string `json:"tai_utc_note,omitempty"` // when TAI-UTC is not set: what it means and who sets it
}

// taiNotSet is the note on a kernel whose TAI offset is 0.
const taiNotSet = "TAI-UTC not set (chronyd leapsectz or ptp4l/phc2sys set it): CLOCK_TAI reads UTC"

func probeClocks() []ClockProbe {
	out := []ClockProbe{}
	for _, c := range timebase.SystemClocks() {
		cp := ClockProbe{Name: c.Domain().String()}
		res, err := c.Resolution()
		if err == nil {
			var a, b, now int64
			a, err = timebase.MonotonicRaw.Now()
			if err == nil {
				now, err = c.Now()
			}
			if err == nil {
				b, err = timebase.MonotonicRaw.Now()
			}
			cp.ResolutionNS, cp.NowNS, cp.OffsetNS = res, now, now-(a+(b-a)/2)
		}
		if err != nil {
			cp.Error = err.Error()
		}
		out = append(out, cp)
	}
	return out
}

// probeKernel reads the kernel's clock discipline; the error says why it is
// unavailable.
func probeKernel(timex func() (timebase.KernelState, error)) (*KernelProbe, string) {
	k, err := timex()
	if err != nil {
		return nil, err.Error()
	}
	kp := &KernelProbe{State: k.StateString(), Status: k.StatusString(), Synced: k.Synced(), OffsetNS: k.OffsetNS,
		FreqPPB: k.FreqPPB, MaxErrorNS: k.MaxErrorNS, EstErrorNS: k.EstErrorNS, TAIOffsetS: k.TAIOffsetS}
	if k.TAIOffsetS == 0 {
		kp.TAINote = taiNotSet
	}
	return kp, ""
}

func (inv *Inventory) writeClocks(pf func(string, ...any)) {
	pf("System clocks:\n")
	for _, c := range inv.Clocks {
		if c.Error != "" {
			pf("  %-14s error: %s\n", c.Name, c.Error)
			continue
		}
		pf("  %-14s now %s\n  %14s resolution %s, offset from monotonic_raw %s\n", c.Name, fmtClockNow(c.Name, c.NowNS), "", fmtDuration(c.ResolutionNS), fmtOffset(c.OffsetNS))
	}
	pf("\nKernel clock discipline (adjtimex):\n")
	if k := inv.Kernel; k != nil {
		pf("  state %s, status %s, synced %v\n  offset %s, frequency %+d ppb, maxerror %s, esterror %s, TAI-UTC %d s\n",
			k.State, orNone(k.Status), k.Synced, fmtOffset(k.OffsetNS), k.FreqPPB, fmtDuration(k.MaxErrorNS), fmtDuration(k.EstErrorNS), k.TAIOffsetS)
		if k.TAINote != "" {
			pf("  %s\n", k.TAINote)
		}
	} else {
		pf("  unavailable: %s\n", inv.KernelErr)
	}
}

// fmtClockNow prints a clock's reading as a date for the epoch clocks and as
// the time since boot for the monotonic family.
func fmtClockNow(name string, ns int64) string {
	switch name {
	case "realtime":
		return fmtDate(ns, "UTC")
	case "tai":
		return fmtDate(ns, "TAI")
	}
	return fmtDuration(ns) + " since boot"
}
