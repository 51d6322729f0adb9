package report

import "testing"

// TestFormatTauAndFixed: τ in one format from ns to days, and positional
// numbers with n significant digits whatever their size.
func TestFormatTauAndFixed(t *testing.T) {
	for s, want := range map[float64]string{1e-6: "1 µs", 0.25: "250 ms", 1: "1 s", 2: "2 s", 10: "10 s", 512: "512 s", 1000: "1000 s",
		8192: "8192 s", 9999.6: "10 000 s", 1e4: "10 000 s", 1e5: "100 000 s", 1e6: "1 000 000 s", 3.2e6: "3 200 000 s", 0: "0 s"} {
		if got := FormatTau(s); got != want {
			t.Errorf("FormatTau(%g) = %q, want %q", s, got, want)
		}
	}
	for _, tc := range []struct {
		v    float64
		n    int
		want string
	}{{-1.416e-4, 4, "-0.0001416"}, {9.9996, 4, "10"}, {123456, 4, "123500"}, {0.5, 2, "0.5"}, {0.0123, 2, "0.012"}, {1e-9, 3, "0.000000001"}} {
		if got := fixedSig(tc.v, tc.n); got != tc.want {
			t.Errorf("fixedSig(%g, %d) = %q, want %q", tc.v, tc.n, got, tc.want)
		}
	}
	if got := FormatDev(1.75e-8); got != "1.75e-8" {
		t.Errorf("FormatDev = %q", got)
	}
}
