package testbed

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMeasurementsSignAndMode reads two lines chronyd 4.3 wrote: the offset
// column is theta, the source minus the local clock, so a local clock 412 ns
// slow of its source reads +4.12e-07 and must come out as -412 ns; the mode
// and timestamp-source columns say interleaved with kernel stamps, and basic.
func TestMeasurementsSignAndMode(t *testing.T) {
	dir := t.TempDir()
	log := `========================================================================================================================================
   Date (UTC) Time     IP Address   L St 123 567 ABCD  LP RP Score    Offset  Peer del. Peer disp.  Root del. Root disp. Refid     MTxRx
========================================================================================================================================
2026-11-27 18:55:01 10.233.0.1      N  1 111 111 1111   0  0 0.00  4.120e-07  1.797e-06  3.500e-08  0.000e+00  0.000e+00 7F7F0101  4I K K
2026-11-27 18:55:02 10.233.0.1      N  1 111 111 1101   0  0 0.00 -2.669e-05  5.717e-05  3.500e-08  0.000e+00  0.000e+00 7F7F0101  4B D K
`
	if err := os.WriteFile(filepath.Join(dir, "measurements.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := (&Chronyd{Dir: dir}).Measurements()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d measurements, want 2: %+v", len(ms), ms)
	}
	a, b := ms[0], ms[1]
	if a.OffsetNS != -412 || a.DelayNS != 1797 || !a.Passed() || !a.Interleaved() || a.Mode != "4I" || a.TxStamp != "K" || a.RxStamp != "K" {
		t.Errorf("first line: %+v, want offset -412 ns (local - source), delay 1797 ns, passed, 4I K K", a)
	}
	if b.OffsetNS != 26690 || b.Passed() || b.Interleaved() || b.Mode != "4B" || b.TxStamp != "D" {
		t.Errorf("second line: %+v, want offset +26690 ns, not passed, 4B D K", b)
	}
}
