package ptp

import (
	"math/rand/v2"
	"testing"
)

// TestDelayGateFlagsOneSided: a figure far above the recent minimum is
// flagged (not before the gate has its minimum of samples), ordinary jitter
// is not, and a level that rose for good is taken once it fills the window.
func TestDelayGateFlagsOneSided(t *testing.T) {
	var g delayGate
	rng := rand.New(rand.NewPCG(1, 2))
	if g.check(50_000) {
		t.Fatal("flagged the first value: the gate has nothing to judge it by")
	}
	g = delayGate{}
	for i := 0; i < 40; i++ {
		if g.check(2000 + rng.Int64N(300)) {
			t.Fatalf("value %d of plain jitter flagged", i)
		}
	}
	if !g.check(9000) {
		t.Error("a 7 us stall was not flagged")
	}
	flagged := 0
	for i := 0; i < 3*gateWindow; i++ {
		if g.check(12000 + rng.Int64N(300)) {
			flagged++
		}
	}
	if flagged == 0 || flagged > gateWindow {
		t.Errorf("a level that rose for good was flagged %d times, want 1 to %d", flagged, gateWindow)
	}
}

// TestFilterSettlesAndFollowsDrift: no filtered offset before the delay
// filter is full; then, with the clock drifting at 5 ppm and one-sided jitter
// on every frame, the filtered offset follows the drift without lag and its
// spread is well under the raw one's; a stalled Sync is flagged and kept out.
func TestFilterSettlesAndFollowsDrift(t *testing.T) {
	const length, pathDelay = 10, 2000
	var f filter
	rng := rand.New(rand.NewPCG(3, 4))
	var rawErr, filtErr []int64
	for k := 0; k < 120; k++ {
		t2 := int64(k) * 1e9
		offset := int64(k) * 5000 // 5 ppm
		ms := offset + pathDelay + rng.Int64N(800)
		if k == 60 {
			ms += 20_000 // a stalled frame
		}
		flagged := f.sync(t2, ms)
		if k == 60 != flagged {
			t.Errorf("Sync %d: flagged %v", k, flagged)
		}
		sm := -offset + pathDelay + rng.Int64N(800)
		f.delay((ms+sm)/2, flagged, length)
		off, _, ok := f.estimate(t2, length)
		if k < length-1 && ok {
			t.Fatalf("a filtered offset at Sync %d, before the delay filter holds %d delays", k, length)
		}
		if k >= length+FilterWindow && k != 60 {
			if !ok {
				t.Fatalf("no filtered offset at Sync %d", k)
			}
			rawErr = append(rawErr, ms-pathDelay-offset-400)
			filtErr = append(filtErr, off-offset)
		}
	}
	rm, rs := meanStd(rawErr)
	fm, fs := meanStd(filtErr)
	t.Logf("error against the truth: raw (less its mean jitter) mean %.0f std %.0f, filtered mean %.0f std %.0f", rm, rs, fm, fs)
	if fs > 0.6*rs {
		t.Errorf("filtered std %.0f ns not under 0.6 x the raw %.0f ns", fs, rs)
	}
	if fm < -150 || fm > 150 {
		t.Errorf("filtered mean error %.0f ns: it lags the drift", fm)
	}
}
