package timebase

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// On 32-bit ARM the clocks are read with 64-bit seconds and agree with Go's
// time; a wrapped 32-bit REALTIME is refused, never shipped as 1901.
func TestClockGettimeArm(t *testing.T) {
	ns, err := clockGettime(unix.CLOCK_REALTIME)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(time.Unix(0, ns)); d < -time.Second || d > time.Second {
		t.Fatalf("REALTIME %d is %v from time.Now", ns, d)
	}
	if _, err := seconds32(unix.CLOCK_REALTIME, -2147483647, 0); !errors.Is(err, errTime32) {
		t.Fatalf("wrapped REALTIME: %v", err)
	}
	if _, err := seconds32(-29, -2147483647, 0); !errors.Is(err, errTime32) { // a PHC's dynamic clock id
		t.Fatalf("wrapped PHC time: %v", err)
	}
	if got, err := seconds32(unix.CLOCK_MONOTONIC, 2147483647, 5); err != nil || got != 2147483647_000_000_005 {
		t.Fatalf("last 32-bit second: %d %v", got, err)
	}
}
