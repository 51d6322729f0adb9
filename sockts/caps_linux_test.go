package sockts

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The capability values decode on every GOOS; they must be the kernel's.
func TestCapabilityConstantsAreTheKernels(t *testing.T) {
	for _, c := range []struct {
		name      string
		ours, sys int64
	}{
		{"SOF_TIMESTAMPING_TX_HARDWARE", sofTxHardware, unix.SOF_TIMESTAMPING_TX_HARDWARE},
		{"SOF_TIMESTAMPING_RX_HARDWARE", sofRxHardware, unix.SOF_TIMESTAMPING_RX_HARDWARE},
		{"SOF_TIMESTAMPING_RAW_HARDWARE", sofRawHardware, unix.SOF_TIMESTAMPING_RAW_HARDWARE},
		{"HWTSTAMP_FILTER_NONE", filterNone, unix.HWTSTAMP_FILTER_NONE},
		{"HWTSTAMP_FILTER_ALL", filterAll, unix.HWTSTAMP_FILTER_ALL},
		{"HWTSTAMP_FILTER_NTP_ALL", filterNTPAll, unix.HWTSTAMP_FILTER_NTP_ALL},
		{"HWTSTAMP_TX_ON", txOn, unix.HWTSTAMP_TX_ON},
		{"SOF_TIMESTAMPING_RAW_HARDWARE is the last capability name", 1 << (len(soNames) - 1), unix.SOF_TIMESTAMPING_RAW_HARDWARE},
		{"HWTSTAMP_FILTER_NTP_ALL is the last filter name", int64(len(rxFilterNames) - 1), unix.HWTSTAMP_FILTER_NTP_ALL},
		{"HWTSTAMP_TX_ONESTEP_P2P is the last tx type name", int64(len(txTypeNames) - 1), unix.HWTSTAMP_TX_ONESTEP_P2P},
	} {
		if c.ours != c.sys {
			t.Errorf("%s: %d here, %d in x/sys", c.name, c.ours, c.sys)
		}
	}
}

// The ethtool answer decodes field by field.
func TestTimestampingOfEthtool(t *testing.T) {
	info := cptsLike
	info.Phc_index = 3
	got := timestampingOf(&info)
	want := Timestamping{PHCIndex: 3, SOFlags: cptsLike.So_timestamping, TxTypes: cptsLike.Tx_types, RxFilters: cptsLike.Rx_filters}
	if got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if hw := got.Hardware(); !hw.RX || !hw.TX || !hw.PTP || hw.NTP {
		t.Errorf("CPTS-like verdict %+v", hw)
	}
}
