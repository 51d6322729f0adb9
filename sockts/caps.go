package sockts

import "fmt"

// Timestamping is what a network interface can timestamp, as the kernel
// reports it (ETHTOOL_GET_TS_INFO, `ethtool -T`): the index of its PTP
// hardware clock, its SOF_TIMESTAMPING_* capabilities, and the hardware
// transmit types (HWTSTAMP_TX_*) and receive filters (HWTSTAMP_FILTER_*), each
// a mask of 1<<value.
type Timestamping struct {
	PHCIndex  int    `json:"phc_index"` // -1: no PHC
	SOFlags   uint32 `json:"so_timestamping"`
	TxTypes   uint32 `json:"tx_types"`
	RxFilters uint32 `json:"rx_filters"`
}

// Hardware is what a NIC stamps in hardware. Hardware receive stamps need a
// filter that matches the packets: PTP event messages are matched by the PTP
// filters (the AM335x CPSW has only ptpv2-event), NTP packets only by "all"
// or "ntp-all".
type Hardware struct {
	RX  bool // received packets, those its filters match
	TX  bool // transmitted packets (HWTSTAMP_TX_ON)
	PTP bool // PTP event messages on receive: any filter but none
	NTP bool // NTP (any UDP) packets on receive: "all" or "ntp-all"
	// RxFilters and TxTypes name what the NIC offers as ethtool does.
	RxFilters []string
	TxTypes   []string
}

// Hardware says what the interface's NIC can stamp in hardware. Hardware
// stamps count the NIC's PHC and reach a socket as raw hardware stamps: an
// interface without either stamps nothing in hardware, whatever else it
// claims. A PTP-only filter such as the CPSW's ptpv2-event leaves NTP packets
// software-stamped.
func (t Timestamping) Hardware() Hardware {
	h := Hardware{RxFilters: bitNames(t.RxFilters, rxFilterNames), TxTypes: bitNames(t.TxTypes, txTypeNames)}
	if t.PHCIndex < 0 || t.SOFlags&sofRawHardware == 0 {
		return h
	}
	h.RX = t.SOFlags&sofRxHardware != 0
	h.PTP = h.RX && t.RxFilters&^(1<<filterNone) != 0
	h.NTP = h.RX && t.RxFilters&(1<<filterAll|1<<filterNTPAll) != 0
	h.TX = t.SOFlags&sofTxHardware != 0 && t.TxTypes&(1<<txOn) != 0
	return h
}

// Capabilities names the SOF_TIMESTAMPING_* capability bits.
func (t Timestamping) Capabilities() []string {
	out := []string{}
	for i, n := range soNames {
		if t.SOFlags&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// The values of linux/net_tstamp.h the capabilities are read with, here so
// that they decode on every GOOS (x/sys has them for Linux only; a test pins
// them to its values).
const (
	sofTxHardware  = 1 << 0 // SOF_TIMESTAMPING_TX_HARDWARE
	sofRxHardware  = 1 << 2 // SOF_TIMESTAMPING_RX_HARDWARE
	sofRawHardware = 1 << 6 // SOF_TIMESTAMPING_RAW_HARDWARE
	filterNone     = 0      // HWTSTAMP_FILTER_NONE
	filterAll      = 1      // HWTSTAMP_FILTER_ALL
	filterNTPAll   = 15     // HWTSTAMP_FILTER_NTP_ALL
	txOn           = 1      // HWTSTAMP_TX_ON
)

// soNames are the SOF_TIMESTAMPING_* capability bits, 1<<0 to 1<<6.
var soNames = []string{
	"tx_hardware", "tx_software", "rx_hardware", "rx_software", "software", "sys_hardware", "raw_hardware",
}

// rxFilterNames are the HWTSTAMP_FILTER_* values as ethtool -T prints them.
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

// bitNames names the set bits of mask; a bit without a name is "bitN".
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
