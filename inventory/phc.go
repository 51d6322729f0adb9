package inventory

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/monagent/monagent/phc"
)

// PHCProbe is a PHC with its capabilities and a trial reading.
type PHCProbe struct {
	phc.Info
	Caps        *phc.Caps `json:"caps,omitempty"`
	PinFuncs    []phc.Pin `json:"pins,omitempty"`
	PinsError   string    `json:"pins_error,omitempty"`
	Method      string    `json:"method,omitempty"`
	OffsetNS    int64     `json:"offset_from_realtime_ns,omitempty"` // realtime - PHC
	PHCNS       int64     `json:"phc_ns,omitempty"`                  // the trial reading's PHC time
	RealtimeNS  int64     `json:"realtime_ns,omitempty"`             // REALTIME at the middle of its read window
	DelayNS     int64     `json:"read_delay_ns,omitempty"`
	Refusals    []string  `json:"method_refusals,omitempty"`
	Error       string    `json:"error,omitempty"`
	ClockGetRes int64     `json:"resolution_ns,omitempty"`
}

// IfaceProbe is a network interface's timestamping support and what it can
// serve. Hardware receive stamps need an RX filter that matches the packets:
// PTP event messages are matched by the PTP filters (the AM335x CPSW has only
// ptpv2-event), NTP packets only by "all" or "ntp-all".
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

// probePHCs lists the PHCs in sysfs, each read by read when it is set; the
// note says why discovery failed.
func probePHCs(p phc.Paths, read func(path string) PHCProbe) (out []PHCProbe, note string) {
	infos, err := phc.Discover(p)
	if err != nil {
		note = "phc discovery: " + err.Error()
	}
	for _, info := range infos {
		pp := PHCProbe{Info: info}
		if read != nil {
			r := read(info.Device)
			r.Info = info
			pp = r
		}
		out = append(out, pp)
	}
	return out, note
}

func probeInterfaces(sys string, ts func(string) (phc.Timestamping, error)) []IfaceProbe {
	var out []IfaceProbe
	for _, d := range glob(filepath.Join(sys, "class", "net", "*")) {
		ip := IfaceProbe{Name: filepath.Base(d), PHCIndex: -1}
		if ts != nil {
			t, err := ts(ip.Name)
			ip.PHCIndex, ip.Capabilities = t.PHCIndex, t.Capabilities()
			ip.RxFilters, ip.TxTypes = bitNames(t.RxFilters, rxFilterNames), bitNames(t.TxTypes, txTypeNames)
			ip.PTPHardware, ip.NTPHardware, ip.TxHardware = hardwareVerdict(t)
			if err != nil {
				ip.Error = err.Error()
			}
		}
		out = append(out, ip)
	}
	return out
}

// rxFilterNames are the HWTSTAMP_FILTER_* values (linux/net_tstamp.h) as
// ethtool -T prints them; ethtool reports them as a bit mask of 1<<value.
var rxFilterNames = []string{
	"none", "all", "some",
	"ptpv1-l4-event", "ptpv1-l4-sync", "ptpv1-l4-delay-req",
	"ptpv2-l4-event", "ptpv2-l4-sync", "ptpv2-l4-delay-req",
	"ptpv2-l2-event", "ptpv2-l2-sync", "ptpv2-l2-delay-req",
	"ptpv2-event", "ptpv2-sync", "ptpv2-delay-req",
	"ntp-all",
}

// txTypeNames are the HWTSTAMP_TX_* values.
var txTypeNames = []string{"off", "on", "onestep-sync", "onestep-p2p"}

const (
	sofTxHardware  = 1 << 0 // SOF_TIMESTAMPING_TX_HARDWARE
	sofRxHardware  = 1 << 2 // SOF_TIMESTAMPING_RX_HARDWARE
	sofRawHardware = 1 << 6 // SOF_TIMESTAMPING_RAW_HARDWARE
	filterAll      = 1      // HWTSTAMP_FILTER_ALL
	filterNTPAll   = 15     // HWTSTAMP_FILTER_NTP_ALL
	txOn           = 1      // HWTSTAMP_TX_ON
)

func bitNames(mask uint32, names []string) []string {
	out := []string{}
	for i := range 32 {
		if mask&(1<<i) == 0 {
			continue
		}
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}

// hardwareVerdict says which packets the NIC can stamp in hardware: PTP
// event messages on receive (any filter but none), NTP packets on receive
// (only "all" or "ntp-all": a PTP-only filter such as the CPSW's ptpv2-event
// leaves NTP replies software-stamped), and transmitted packets.
func hardwareVerdict(t phc.Timestamping) (ptpRX, ntpRX, tx bool) {
	if t.PHCIndex < 0 || t.SOFlags&sofRawHardware == 0 {
		return false, false, false
	}
	if t.SOFlags&sofRxHardware != 0 {
		ptpRX = t.RxFilters&^1 != 0 // any filter other than none
		ntpRX = t.RxFilters&(1<<filterAll|1<<filterNTPAll) != 0
	}
	tx = t.SOFlags&sofTxHardware != 0 && t.TxTypes&(1<<txOn) != 0
	return ptpRX, ntpRX, tx
}

func (inv *Inventory) writePHCs(pf func(string, ...any)) {
	pf("\nPTP hardware clocks:\n")
	if len(inv.PHCs) == 0 {
		pf("  absent: no /sys/class/ptp entries (no PHC driver loaded)\n")
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
			pf("    pins: absent: %s\n", pinsAbsent(p))
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
