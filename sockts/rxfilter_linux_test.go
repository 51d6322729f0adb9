package sockts

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A NIC like the AM335x CPTS: hardware timestamps for PTPv2 event messages of
// any layer, no "all packets" filter.
var cptsLike = unix.EthtoolTsInfo{
	So_timestamping: unix.SOF_TIMESTAMPING_TX_HARDWARE | unix.SOF_TIMESTAMPING_RX_HARDWARE | unix.SOF_TIMESTAMPING_RAW_HARDWARE,
	Tx_types:        1<<unix.HWTSTAMP_TX_OFF | 1<<unix.HWTSTAMP_TX_ON,
	Rx_filters:      1<<unix.HWTSTAMP_FILTER_NONE | 1<<unix.HWTSTAMP_FILTER_PTP_V2_EVENT,
}

func TestPickRxFilter(t *testing.T) {
	ptpUDP := []int32{unix.HWTSTAMP_FILTER_PTP_V2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT, unix.HWTSTAMP_FILTER_ALL}
	ptpL4only := []int32{unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT}
	allNIC := cptsLike
	allNIC.Rx_filters |= 1 << unix.HWTSTAMP_FILTER_ALL
	for _, tc := range []struct {
		name    string
		cur     *unix.HwTstampConfig
		info    unix.EthtoolTsInfo
		filters []int32
		want    int32
		keep    bool
		err     string
	}{
		{"off: first offered", &unix.HwTstampConfig{}, cptsLike, ptpUDP, unix.HWTSTAMP_FILTER_PTP_V2_EVENT, false, ""},
		{"unknown current: first offered", nil, cptsLike, ptpUDP, unix.HWTSTAMP_FILTER_PTP_V2_EVENT, false, ""},
		{"ptp4l's V2_EVENT covers L4 events: keep", &unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: unix.HWTSTAMP_FILTER_PTP_V2_EVENT},
			cptsLike, ptpL4only, unix.HWTSTAMP_FILTER_PTP_V2_EVENT, true, ""},
		{"all packets cover everything: keep", &unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: unix.HWTSTAMP_FILTER_ALL},
			allNIC, rxFiltersNTP, unix.HWTSTAMP_FILTER_ALL, true, ""},
		{"a narrower filter is replaced", &unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: unix.HWTSTAMP_FILTER_PTP_V2_L4_SYNC},
			cptsLike, ptpUDP, unix.HWTSTAMP_FILTER_PTP_V2_EVENT, false, ""},
		{"receive on, transmit off: set ours", &unix.HwTstampConfig{Rx_filter: unix.HWTSTAMP_FILTER_PTP_V2_EVENT},
			cptsLike, ptpUDP, unix.HWTSTAMP_FILTER_PTP_V2_EVENT, false, ""},
		{"NTP on a PTP-only NIC", &unix.HwTstampConfig{}, cptsLike, rxFiltersNTP, 0, false, "cannot timestamp the packets in hardware"},
		{"no hardware", nil, unix.EthtoolTsInfo{So_timestamping: unix.SOF_TIMESTAMPING_RX_SOFTWARE}, ptpUDP, 0, false, "eth9 has no hardware timestamping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, keep, err := pickRxFilter("eth9", tc.cur, &tc.info, tc.filters)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || f != tc.want || keep != tc.keep {
				t.Fatalf("filter %d keep %v (%v), want %d keep %v", f, keep, err, tc.want, tc.keep)
			}
		})
	}
}
