package timeapi

import (
	"io"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
)

// The vDSO path is the one Now uses on amd64, and it agrees with the system
// call while goroutines are preempted (SIGURG), profiled (SIGPROF), their
// stacks grow and the GC runs.
func TestVDSORawClock(t *testing.T) {
	c, ok := rawClock().(vdsoClock)
	if !ok {
		t.Fatalf("rawClock on amd64 Linux is %T, want the vDSO", rawClock())
	}
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := int64(0)
			for i := 0; i < 200_000; i++ {
				v, err := c.Now()
				if err != nil || v < prev {
					t.Errorf("read %d: %d after %d, %v", i, v, prev, err)
					return
				}
				prev = v
				if i%50_000 == 0 {
					runtime.GC()
				}
			}
		}()
	}
	wg.Wait()
	mono, ok := monotonicClock().(vdsoClock)
	rt, ok2 := realtimeClock().(vdsoClock)
	if !ok || !ok2 {
		t.Fatalf("monotonicClock, realtimeClock on amd64 Linux are %T, %T, want the vDSO", monotonicClock(), realtimeClock())
	}
	for i := 0; i < 100; i++ {
		if err := c.check(); err != nil {
			t.Fatal(err)
		}
		if err := mono.check(); err != nil {
			t.Fatal(err)
		}
		if err := rt.check(); err != nil {
			t.Fatal(err)
		}
	}
}
