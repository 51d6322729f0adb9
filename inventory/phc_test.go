package inventory

import (
	"testing"

	"github.com/monagent/monagent/phc"
)

func TestHardwareVerdict(t *testing.T) {
	for _, c := range []struct {
		name         string
		ts           phc.Timestamping
		ptp, ntp, tx bool
	}{
		{"am335x cpsw: ptpv2-event only", cpswTimestamping, true, false, true},
		{"igb: all", phc.Timestamping{PHCIndex: 1, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<1}, true, true, true},
		{"ntp-all", phc.Timestamping{PHCIndex: 2, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<15}, true, true, true},
		{"l2 and l4 ptp filters", phc.Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<6 | 1<<9}, true, false, true},
		{"rx all, tx off only", phc.Timestamping{PHCIndex: 0, SOFlags: 0x5c, TxTypes: 1, RxFilters: 1<<0 | 1<<1}, true, true, false},
		{"filter none only", phc.Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1}, false, false, true},
		{"no PHC", phc.Timestamping{PHCIndex: -1, SOFlags: 0x5f, TxTypes: 3, RxFilters: 3}, false, false, false},
		{"software only", phc.Timestamping{PHCIndex: -1, SOFlags: 0x1a}, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ptp, ntp, tx := hardwareVerdict(c.ts)
			if ptp != c.ptp || ntp != c.ntp || tx != c.tx {
				t.Fatalf("PTP %v NTP %v TX %v, want %v %v %v", ptp, ntp, tx, c.ptp, c.ntp, c.tx)
			}
		})
	}
}
