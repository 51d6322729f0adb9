package judge

import "testing"

// Outlier: FREERUN for a fresh, synchronised sample whose offset alone put
// it over the threshold; not for a wide uncertainty, an old sample, an
// unsynchronised source or a holdover's prediction.
func TestOutlier(t *testing.T) {
	cfg := Config{ThresholdNS: 1e6, HoldoverNS: 10e9, MinSamples: 2, StaleNS: 3e9}
	at := func(c *Clock, sec int64, synced bool, off, bound int64) {
		c.Observe(Sample{TimeNS: sec * 1e9, MonoNS: sec * 1e9, Synced: synced, OffsetNS: off, BoundNS: bound})
	}
	mk := func() *Clock {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A PPS on the wrong second: offset 1 s, uncertainty 20 µs.
	c := mk()
	at(c, 1, true, 1e9, 1e9+20e3)
	if st, _ := c.State(); st != Freerun || !c.Outlier(1e9) {
		t.Fatalf("1 s off with a 20 µs uncertainty: %v, outlier %v; want FREERUN, an outlier", st, c.Outlier(1e9))
	}
	if c.Outlier(5e9) {
		t.Error("an outlier 4 s after its sample (stale 3 s)")
	}
	// Wide: the uncertainty itself over the threshold.
	c = mk()
	at(c, 1, true, 0, 2e6)
	if c.Outlier(1e9) {
		t.Error("an uncertainty of 2 ms over a 1 ms threshold is an outlier")
	}
	// Unsynchronised.
	c = mk()
	at(c, 1, false, 1e9, 1e9+20e3)
	if c.Outlier(1e9) {
		t.Error("an unsynchronised sample is an outlier")
	}
	// LOCKED is no outlier; nor a lost reference's prediction past its
	// holdover.
	c = mk()
	at(c, 1, true, 10, 100)
	at(c, 2, true, 10, 100)
	if st, _ := c.State(); st != Locked || c.Outlier(2e9) {
		t.Fatalf("%v, outlier %v; want LOCKED, no outlier", st, c.Outlier(2e9))
	}
	c.Missed(Instant{RealNS: 5e9, MonoNS: 5e9})
	c.Missed(Instant{RealNS: 20e9, MonoNS: 20e9})
	if st, _ := c.State(); st != Freerun || c.Outlier(20e9) {
		t.Fatalf("after the holdover: %v, outlier %v; want FREERUN, no outlier", st, c.Outlier(20e9))
	}
}
