package inventory

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/sockts"
)

// PHCProbe is a PHC with its capabilities and a trial reading.
type PHCProbe struct {
	phc.Info
	Caps        *phc.Caps `json:"caps,omitempty"`
	PinFuncs    []phc.Pin `json:"pins"`
	PinsError   string    `json:"pins_error,omitempty"`
	PinsAbsent  string    `json:"pins_absent,omitempty"` // why no pin is listed
	Method      string    `json:"method,omitempty"`
	OffsetNS    int64     `json:"offset_from_realtime_ns,omitempty"` // realtime - PHC
	PHCNS       int64     `json:"phc_ns,omitempty"`                  // the trial reading's PHC time
	RealtimeNS  int64     `json:"realtime_ns,omitempty"`             // REALTIME at the middle of its read window
	DelayNS     int64     `json:"read_delay_ns,omitempty"`
	Refusals    []string  `json:"method_refusals"`
	Error       string    `json:"error,omitempty"`
	ClockGetRes int64     `json:"resolution_ns,omitempty"`
}

// IfaceProbe is a network interface's timestamping support and what it can
// serve: sockts.Timestamping.Hardware's verdict.
type IfaceProbe struct {
	Name         string   `json:"name"`
	PHCIndex     int      `json:"phc_index"`
	Capabilities []string `json:"timestamping"`
	RxFilters    []string `json:"rx_filters"`      // HWTSTAMP_FILTER_* as ethtool names them
	TxTypes      []string `json:"tx_types"`        // HWTSTAMP_TX_*
	PTPHardware  bool     `json:"ptp_rx_hardware"` // PTP event messages stamped on receive by the NIC
	NTPHardware  bool     `json:"ntp_rx_hardware"` // NTP (any UDP) packets stamped on receive by the NIC
	TxHardware   bool     `json:"tx_hardware"`     // transmitted packets stamped by the NIC
	Error        string   `json:"error,omitempty"`
}

// absentPHCs is why the PHC list is empty.
const absentPHCs = "no /sys/class/ptp entries (no PHC driver loaded)"

// probePHCs lists the PHCs in sysfs, each read by read when it is set; the
// note says why discovery failed.
func probePHCs(p phc.Paths, read func(path string) PHCProbe) (out []PHCProbe, note string) {
	infos, err := phc.Discover(p)
	if err != nil {
		note = "phc discovery: " + err.Error()
	}
	out = []PHCProbe{}
	for _, info := range infos {
		pp := PHCProbe{Info: info}
		if read != nil {
			r := read(info.Device)
			r.Info = info
			pp = r
		}
		pp.Interfaces, pp.PinFuncs, pp.Refusals = list(pp.Interfaces), list(pp.PinFuncs), list(pp.Refusals)
		if len(pp.PinFuncs) == 0 {
			pp.PinsAbsent = pinsAbsent(pp)
		}
		out = append(out, pp)
	}
	return out, note
}

// probeInterfaces lists the network interfaces in sysfs with what each can
// timestamp, asked of ts when it is set.
func probeInterfaces(sys string, ts func(string) (sockts.Timestamping, error)) []IfaceProbe {
	out := []IfaceProbe{}
	for _, d := range glob(filepath.Join(sys, "class", "net", "*")) {
		ip := IfaceProbe{Name: filepath.Base(d), PHCIndex: -1, Capabilities: []string{}, RxFilters: []string{}, TxTypes: []string{}}
		if ts != nil {
			t, err := ts(ip.Name)
			hw := t.Hardware()
			ip.PHCIndex, ip.Capabilities = t.PHCIndex, t.Capabilities()
			ip.RxFilters, ip.TxTypes = hw.RxFilters, hw.TxTypes
			ip.PTPHardware, ip.NTPHardware, ip.TxHardware = hw.PTP, hw.NTP, hw.TX
			if err != nil {
				ip.Error = err.Error()
			}
		}
		out = append(out, ip)
	}
	return out
}

func (inv *Inventory) writePHCs(pf func(string, ...any)) {
	pf("\nPTP hardware clocks:\n")
	if len(inv.PHCs) == 0 {
		pf("  absent: %s\n", inv.Absent.PHCs)
	}
	for _, p := range inv.PHCs {
		pf("  %s  %q  interfaces %s  max adj %d ppb, extts %d, perout %d, pins %d, pps %v\n",
			p.Device, p.Name, orNone(strings.Join(p.Interfaces, ",")), p.MaxAdjPPB, p.ExtTS, p.PerOut, p.Pins, p.PPS)
		if p.Caps != nil {
			pf("    cross-timestamping %v, adjust phase %v\n", p.Caps.CrossTimestamping, p.Caps.AdjustPhase)
		}
		for _, pin := range p.PinFuncs {
			pf("    pin %d %q: %s channel %d\n", pin.Index, pin.Name, pin.Func, pin.Channel)
		}
		if len(p.PinFuncs) == 0 {
			pf("    pins: absent: %s\n", p.PinsAbsent)
		}
		if p.Error != "" {
			pf("    error: %s\n", p.Error)
		} else if p.Method != "" {
			pf("    trial reading (%s, read delay %s): PHC %s, realtime %s\n", p.Method, fmtDuration(p.DelayNS), fmtDate(p.PHCNS, "(PHC timescale)"), fmtDate(p.RealtimeNS, "UTC"))
			pf("    PHC - realtime %s\n", fmtOffset(-p.OffsetNS))
		}
		for _, r := range p.Refusals {
			pf("    refused: %s\n", r)
		}
	}
}

func (inv *Inventory) writeInterfaces(pf func(string, ...any)) {
	pf("\nNetwork interfaces (timestamping):\n")
	for _, i := range inv.Interfaces {
		phcText := "no PHC"
		if i.PHCIndex >= 0 {
			phcText = fmt.Sprintf("PHC /dev/ptp%d", i.PHCIndex)
		}
		pf("  %-10s %s, %s", i.Name, phcText, orNone(strings.Join(i.Capabilities, " ")))
		if i.Error != "" {
			pf(" (%s)", i.Error)
		}
		pf("\n  %10s hardware timestamps: ", "")
		if !i.PTPHardware && !i.NTPHardware && !i.TxHardware {
			pf("none, software only\n")
			continue
		}
		pf("PTP %s, NTP %s (rx filters: %s; tx: %s)\n", yesNo(i.PTPHardware, i.TxHardware), yesNo(i.NTPHardware, i.TxHardware),
			orNone(strings.Join(slices.DeleteFunc(slices.Clone(i.RxFilters), func(f string) bool { return f == "none" }), " ")),
			orNone(strings.Join(i.TxTypes, " ")))
	}
}

// pinsAbsent says why a PHC lists no pins.
func pinsAbsent(p PHCProbe) string {
	switch {
	case p.PinsError != "":
		return p.PinsError
	case p.Pins == 0:
		return "the PHC has no programmable pins (n_programmable_pins 0)"
	case p.Caps == nil:
		return "not read: the PHC did not open"
	}
	return "the PHC listed none"
}

// yesNo is a protocol's hardware verdict: receive stamps, and whether the
// NIC stamps what is sent too.
func yesNo(rx, tx bool) string {
	switch {
	case rx && tx:
		return "yes"
	case rx:
		return "rx only"
	}
	return "no"
}
