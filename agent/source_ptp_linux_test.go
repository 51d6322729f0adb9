package agent

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// TestPHCToRealtime: the probe's hardware timestamps go through the model the
// phc source keeps; without one they are refused, with a reason.
func TestPHCToRealtime(t *testing.T) {
	trs := NewTranslators()
	dom := timebase.PHC(3)
	f := phcToRealtime(trs, dom)
	if _, err := f(1_000); err == nil || !strings.Contains(err.Error(), "enable the phc source") {
		t.Fatalf("no model: %v", err)
	}
	// The phc source's samples: REALTIME local, the PHC (on TAI, 37 s ahead)
	// as reference.
	tr := trs.Get(timebase.DomainRealtime, dom, 8)
	for i := int64(0); i < 4; i++ {
		rt := 1_700_000_000_000_000_000 + i*1_000_000_000
		tr.Add(timebase.Sample{Local: rt, Ref: rt + 37_000_000_000, DelayNS: 100})
	}
	phcNS := int64(1_700_000_002_500_000_000 + 37_000_000_000)
	got, err := f(phcNS)
	if want := int64(1_700_000_002_500_000_000); err != nil || got < want-2 || got > want+2 {
		t.Fatalf("translated %d (%v), want %d", got, err, want)
	}
}

// TestPTPProbeHardwareNeedsAPHC: hardware timestamps on an interface without
// a PHC (lo) are one error naming the key.
func TestPTPProbeHardwareNeedsAPHC(t *testing.T) {
	c := Default()
	c.PTP.Enabled, c.PTP.Probe.Enabled, c.PTP.Probe.Interface, c.PTP.Probe.Timestamping = true, true, "lo", "hardware"
	_, err := buildPTPProbe(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: NewTranslators()})
	if err == nil || !strings.Contains(err.Error(), "ptp.probe.interface: lo has no PTP hardware clock") {
		t.Fatalf("hardware timestamps on lo: %v", err)
	}
}
