package ntp

import (
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/facebook/time/ntp/chrony"
)

// TestChronyStatusInIntegerUnits: chronyd's float seconds and ppm become ns
// and ppb, truncated toward zero, signs kept; what chronyd did not give stays
// nil.
func TestChronyStatusInIntegerUnits(t *testing.T) {
	ref := time.Unix(1_795_000_000, 123_456_789)
	tr := trackingOf(chrony.Tracking{RefID: 0xC0000201, IPAddr: net.IPv4(192, 0, 2, 1), Stratum: 3, LeapStatus: 1, RefTime: ref,
		CurrentCorrection: -2.1e-6, LastOffset: -1.8e-6, RMSOffset: 4e-6, FreqPPM: -1.5, ResidFreqPPM: 0.0021, SkewPPM: 0.03,
		RootDelay: 0.0123456789, RootDispersion: 2.5e-4, LastUpdateInterval: 64.2})
	want := ChronyTracking{RefID: 0xC0000201, Reference: net.IPv4(192, 0, 2, 1), Stratum: 3, LeapStatus: 1, RefTimeNS: ref.UnixNano(),
		SystemTimeNS: -2100, LastOffsetNS: -1800, RMSOffsetNS: 4000, FreqPPB: -1500, ResidualFreqPPB: 2, SkewPPB: 30,
		RootDelayNS: 12_345_678, RootDispersionNS: 250_000, UpdateIntervalNS: 64_200_000_000}
	if !reflect.DeepEqual(tr, want) {
		t.Errorf("tracking\n got %+v\nwant %+v", tr, want)
	}
	addr := &chrony.IPAddr{IP: [16]uint8{192, 0, 2, 1}, Family: chrony.IPAddrInet4}
	src := Source{Data: chrony.SourceData{IPAddr: addr, Poll: 6, Stratum: 2, State: chrony.SourceStateSync, Mode: chrony.SourceModeClient,
		Reachability: 255, SinceSample: 17, OrigLatestMeas: -3.1e-6, LatestMeas: -3.1e-6, LatestMeasErr: 9e-5}}
	got := sourceOf(src)
	if got.Address != "192.0.2.1" || got.State != "sync" || got.Mode != "client" || got.Poll != 6 || got.Reachability != 255 ||
		got.SinceSampleS != 17 || got.LatestMeasNS != -3100 || got.LatestMeasErrNS != 90_000 || got.Stats != nil || got.NTP != nil {
		t.Fatalf("source %+v", got)
	}
	src.Stats = &chrony.SourceStats{NSamples: 8, NRuns: 5, SpanSeconds: 460, StandardDeviation: 1.2e-6, ResidFreqPPM: -0.004,
		SkewPPM: 0.25, EstimatedOffset: 5e-7, EstimatedOffsetErr: -1e-9}
	src.NTPData = &chrony.NTPData{Offset: 2.5e-6, PeerDelay: 1.5e-4, PeerDispersion: 1e-6, ResponseTime: 3e-5, JitterAsymmetry: 0.25,
		TXTssChar: 'K', RXTssChar: 'H', TotalTXCount: 10, TotalRXCount: 9, TotalValidCount: 8}
	got = sourceOf(src)
	if st := *got.Stats; st != (ChronySourceStats{Samples: 8, Runs: 5, SpanS: 460, StdDevNS: 1200, EstOffsetNS: 500, EstOffsetErrNS: -1,
		ResidualFreqPPB: -4, SkewPPB: 250}) {
		t.Errorf("stats %+v", st)
	}
	if nd := *got.NTP; nd != (ChronyNTPData{OffsetNS: 2500, PeerDelayNS: 150_000, PeerDispersionNS: 1000, ResponseTimeNS: 30_000,
		JitterAsymmetry: 0.25, TotalTX: 10, TotalRX: 9, TotalValid: 8, TxTimestamping: 'K', RxTimestamping: 'H'}) {
		t.Errorf("ntpdata %+v", nd)
	}
}

// chronyd on its local reference (the `local` directive, refid 7F7F0101)
// reports leap status normal and a stratum, but follows nothing: not
// synchronised. Before, it counted as synchronised.
func TestChronyLocalReferenceIsNotSynced(t *testing.T) {
	for _, tc := range []struct {
		tr   ChronyTracking
		want bool
	}{
		{ChronyTracking{RefID: 0x7F7F0101, Stratum: 10, LeapStatus: 0}, false},
		{ChronyTracking{RefID: 0xC0A80001, Stratum: 3, LeapStatus: 0}, true},
		{ChronyTracking{RefID: 0xC0A80001, Stratum: 3, LeapStatus: 3}, false},
		{ChronyTracking{RefID: 0, LeapStatus: 0}, false},
	} {
		if got := tc.tr.Synced(); got != tc.want || tc.tr.Local() != (tc.tr.RefID == 0x7F7F0101) {
			t.Errorf("%08X leap %d: synced %v, want %v", tc.tr.RefID, tc.tr.LeapStatus, got, tc.want)
		}
	}
}
