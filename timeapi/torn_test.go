package timeapi

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tornModel is the model the torn-read test publishes as its k-th: every
// field is a different function of k, so a read mixing two publishes breaks
// the invariant somewhere.
func tornModel(k int64) Model {
	return Model{
		State:      State(1 + k%3),
		BaseNS:     1e9 + k,
		TrueNS:     k*7 + 11,
		RatePPB:    k%200_001 - 100_000,
		BoundNS:    k % 1_000_003,
		GrowthPPB:  k % 999_983,
		VoidNS:     1<<62 - k,
		RealtimeNS: 1e9 + k + 5, // REALTIME − RAW stays 5: no step
	}
}

// tornReads is how many reads TestTornReads makes: MONAGENT_TORN_READS (the
// measured figure: 100000000), else a bound that keeps the suite short.
func tornReads(t *testing.T) (int64, time.Duration) {
	if s := os.Getenv("MONAGENT_TORN_READS"); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || n < 1 {
			t.Fatalf("MONAGENT_TORN_READS=%q", s)
		}
		return int64(n), 0
	}
	if raceEnabled {
		return 1_000_000, time.Second
	}
	return 20_000_000, 2 * time.Second
}

const tornPeriod = 20 * time.Microsecond

// TestTornReads publishes at 50 kHz (far above the agent's rate) while
// readers on the other core check every field of every read they are given
// against the invariant. Torn reads: 0; reads that found the section mid-write
// every time fail with ErrInconsistent and are counted, not accepted.
func TestTornReads(t *testing.T) {
	reads, limit := tornReads(t)
	w, r := pair(t)
	w.Publish(1, tornModel(0))

	var stop atomic.Bool
	var published atomic.Int64
	writerDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(writerDone)
		// Paced at one publish per tornPeriod (50 kHz) by spinning, not
		// sleeping: a writer that never leaves the section even would starve
		// every reader into ErrInconsistent, which is no test of tearing.
		next := time.Now()
		for k := int64(1); !stop.Load(); k++ {
			w.Publish(1, tornModel(k))
			published.Store(k)
			next = next.Add(tornPeriod)
			for time.Now().Before(next) && !stop.Load() {
			}
		}
	}()
	readers := runtime.GOMAXPROCS(0) - 1
	if readers < 1 {
		readers = 1
	}
	var good, torn, inconsistent, changed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(limit)
	for g := 0; g < readers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s snapshot
			last := int64(-1)
			// reads consistent reads each, bounded at twice as many attempts.
			want := reads / int64(readers)
			for i, ok := int64(0), int64(0); ok < want && i < 2*want; i++ {
				if limit > 0 && i%4096 == 0 && time.Now().After(deadline) {
					return
				}
				if err := r.snapshot("global", &s, true); err != nil {
					if err != ErrInconsistent {
						t.Errorf("read %d: %v", i, err)
						return
					}
					inconsistent.Add(1)
					continue
				}
				k := s.BaseNS - 1e9
				if s.Model != tornModel(k) || s.stepTo != 0 || k < last {
					if torn.Add(1) <= 5 {
						t.Errorf("torn or stale read: %+v is not model %d (last %d)", s, k, last)
					}
				}
				if k != last {
					changed.Add(1)
				}
				last = k
				ok++
				good.Add(1)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-writerDone
	el := time.Since(start)
	rate := float64(published.Load()) / el.Seconds()
	t.Logf("%d reads (%d readers, GOARCH %s) against %d publishes in %v (%.0f Hz): torn %d, ErrInconsistent %d, %d reads saw a new model",
		good.Load(), readers, runtime.GOARCH, published.Load(), el.Round(time.Millisecond), rate, torn.Load(), inconsistent.Load(), changed.Load())
	if torn.Load() != 0 {
		t.Fatalf("%d torn reads", torn.Load())
	}
	if limit == 0 && good.Load() < reads-int64(readers) {
		t.Fatalf("%d consistent reads, asked for %d", good.Load(), reads)
	}
	if good.Load() == 0 || changed.Load() < 2 {
		t.Fatalf("%d reads, %d saw a new model: the test proved nothing", good.Load(), changed.Load())
	}
}
