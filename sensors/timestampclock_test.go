package sensors

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// TestTimestampClockAsTheKernelWritesIt: a real kernel's
// current_timestamp_clock ends with a newline and a NUL (seen on Debian's
// 6.1 with iio_simple_dummy), which must name the clock all the same.
func TestTimestampClockAsTheKernelWritesIt(t *testing.T) {
	fs := board(t)
	dev, err := fs.FindIIODevice("TI-am335x-adc.0.auto")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want timebase.Domain
	}{
		{"realtime\n\x00", timebase.DomainRealtime},
		{"monotonic_raw\n\x00", timebase.DomainMonotonicRaw},
		{"boottime\n", timebase.DomainBoottime},
	} {
		if err := os.WriteFile(filepath.Join(dev.Dir, "current_timestamp_clock"), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := fs.OpenBuffer(dev, []string{"voltage0"}, 0)
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if b.Clock != tc.want {
			t.Errorf("%q: clock %v, want %v", tc.text, b.Clock, tc.want)
		}
		b.Close()
	}
}
