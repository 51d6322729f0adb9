package timebase

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestKernelStateConversion(t *testing.T) {
	tx := unix.Timex{
		Offset: -1500, Freq: -1234567, Maxerror: 16000, Esterror: 250, Status: StaPLL | StaNano,
		Constant: 7, Precision: 1, Tolerance: 32768000, Tick: 10000, Tai: 37, Jitter: 42,
	}
	got := kernelStateFromTimex(0, &tx)
	want := KernelState{
		State: 0, OffsetNS: -1500, FreqPPB: -18838, MaxErrorNS: 16_000_000, EstErrorNS: 250_000,
		Status: StaPLL | StaNano, Constant: 7, PrecisionNS: 1000, ToleranceP: 500_000,
		TickNS: 10_000_000, JitterNS: 42, TAIOffsetS: 37,
	}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if got.StatusString() != "PLL|NANO" || !got.Synced() {
		t.Fatalf("status %q synced %v", got.StatusString(), got.Synced())
	}
	tx.Status = StaUnsync // microsecond mode
	got = kernelStateFromTimex(TimeError, &tx)
	if got.OffsetNS != -1_500_000 || got.JitterNS != 42_000 || got.Synced() || got.StateString() != "TIME_ERROR" {
		t.Fatalf("us mode: %+v", got)
	}
}
