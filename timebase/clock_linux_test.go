package timebase

import (
	"testing"
)

func TestSystemClocksRead(t *testing.T) {
	for _, c := range SystemClocks() {
		a, err := c.Now()
		if err != nil {
			t.Fatalf("%s: %v", c.Domain(), err)
		}
		b, _ := c.Now()
		if b < a {
			t.Errorf("%s went backwards: %d then %d", c.Domain(), a, b)
		}
		res, err := c.Resolution()
		if err != nil || res <= 0 || res > 10_000_000 {
			t.Errorf("%s resolution %d ns, %v", c.Domain(), res, err)
		}
	}
}

func TestClockReadDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := MonotonicRaw.Now(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("MonotonicRaw.Now allocates %v times per call", allocs)
	}
}

func TestReadKernelState(t *testing.T) {
	k, err := ReadKernelState()
	if err != nil {
		t.Fatal(err)
	}
	if k.TickNS < 1_000_000 || k.TickNS > 100_000_000 {
		t.Errorf("tick %d ns is not a kernel tick", k.TickNS)
	}
	if k.State < 0 || k.State > 5 {
		t.Errorf("adjtimex state %d", k.State)
	}
	t.Logf("kernel state %s status %s freq %d ppb maxerror %d ns synced %v", k.StateString(), k.StatusString(), k.FreqPPB, k.MaxErrorNS, k.Synced())
}

// TestRealtimeFastPathIsCLOCK_REALTIME checks the vDSO path against the system
// call: both must read the same clock.
func TestRealtimeFastPathIsCLOCK_REALTIME(t *testing.T) {
	for i := 0; i < 100; i++ {
		a, _ := clockGettime(clockRealtime)
		b, _ := Realtime.Now()
		c, _ := clockGettime(clockRealtime)
		if b < a || b > c {
			t.Fatalf("time.Now %d outside the CLOCK_REALTIME bracket [%d, %d]", b, a, c)
		}
	}
}
