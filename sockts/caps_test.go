package sockts

import (
	"strings"
	"testing"
)

// cpsw is what ethtool reports for the AM335x CPSW: hardware stamps with the
// CPTS PHC, TX off/on, RX filters none and ptpv2-event.
var cpsw = Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 1<<0 | 1<<1, RxFilters: 1<<0 | 1<<12}

func TestHardwareVerdict(t *testing.T) {
	for _, c := range []struct {
		name         string
		ts           Timestamping
		ptp, ntp, tx bool
	}{
		{"am335x cpsw: ptpv2-event only", cpsw, true, false, true},
		{"igb: all", Timestamping{PHCIndex: 1, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<1}, true, true, true},
		{"ntp-all", Timestamping{PHCIndex: 2, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<15}, true, true, true},
		{"l2 and l4 ptp filters", Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<6 | 1<<9}, true, false, true},
		{"rx all, tx off only", Timestamping{PHCIndex: 0, SOFlags: 0x5c, TxTypes: 1, RxFilters: 1<<0 | 1<<1}, true, true, false},
		{"filter none only", Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1}, false, false, true},
		{"no PHC", Timestamping{PHCIndex: -1, SOFlags: 0x5f, TxTypes: 3, RxFilters: 3}, false, false, false},
		{"software only", Timestamping{PHCIndex: -1, SOFlags: 0x1a}, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hw := c.ts.Hardware()
			if hw.PTP != c.ptp || hw.NTP != c.ntp || hw.TX != c.tx {
				t.Fatalf("PTP %v NTP %v TX %v, want %v %v %v", hw.PTP, hw.NTP, hw.TX, c.ptp, c.ntp, c.tx)
			}
		})
	}
}

// The names are ethtool's, whatever the verdict; a bit beyond the known ones
// is named by its number.
func TestHardwareNamesFiltersAndTypes(t *testing.T) {
	hw := cpsw.Hardware()
	if got := strings.Join(hw.RxFilters, ","); got != "none,ptpv2-event" {
		t.Errorf("cpsw rx filters %q", got)
	}
	if got := strings.Join(hw.TxTypes, ","); got != "off,on" {
		t.Errorf("cpsw tx types %q", got)
	}
	hw = Timestamping{PHCIndex: -1, TxTypes: 1<<3 | 1<<7, RxFilters: 1<<15 | 1<<20}.Hardware()
	if got := strings.Join(hw.RxFilters, ",") + ";" + strings.Join(hw.TxTypes, ","); got != "ntp-all,bit20;onestep-p2p,bit7" {
		t.Errorf("names %q", got)
	}
	if hw = (Timestamping{PHCIndex: -1}).Hardware(); hw.RxFilters == nil || hw.TxTypes == nil || len(hw.RxFilters)+len(hw.TxTypes) != 0 {
		t.Errorf("nothing offered: %#v, want empty lists", hw)
	}
}

func TestTimestampingCapabilities(t *testing.T) {
	ts := Timestamping{PHCIndex: 0, SOFlags: 1<<0 | 1<<2 | 1<<6}
	if got := strings.Join(ts.Capabilities(), ","); got != "tx_hardware,rx_hardware,raw_hardware" || !ts.Hardware().RX {
		t.Fatalf("capabilities %q hardware %+v", got, ts.Hardware())
	}
	if (Timestamping{PHCIndex: -1, SOFlags: 1<<1 | 1<<3 | 1<<4}).Hardware().RX {
		t.Fatal("software-only interface claims hardware timestamping")
	}
}
