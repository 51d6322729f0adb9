package ptp

import (
	"math/rand/v2"
	"testing"
	"time"
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

// TestSlaveFlagsAHeldUpSyncAndSettles: a Slave measuring a master whose
// frames take 6 us each way plus jitter. Each Sync is measured with its raw
// offset as ptp4l computes it; the filtered offset is absent until the
// filtered delay's filter holds DelayFilter delays, then present on every
// Sync; a Sync held up by 30 us is flagged, still reported with its raw
// offset, and leaves the filtered offset where it was.
func TestSlaveFlagsAHeldUpSyncAndSettles(t *testing.T) {
	s := &Slave{Port: us, DelayFilter: 10}
	start := time.Unix(1_795_000_000, 0)
	base := int64(1_795_000_000_000_000_000)
	s.General(announce(gm, 128), start)
	rng := rand.New(rand.NewPCG(5, 6))
	const held = 40
	settled := -1
	for i := 0; i < 60; i++ {
		now := start.Add(time.Duration(i) * time.Second)
		if i%5 == 0 {
			s.General(announce(gm, 128), now)
		}
		t1 := base + int64(i)*1e9
		t2 := t1 + 6000 + rng.Int64N(400)
		if i == held {
			t2 += 30_000
		}
		if _, _, err := s.Event(syncMsg(gm, uint16(i), true, 0, 0), t2, now); err != nil {
			t.Fatal(err)
		}
		ex, err := s.General(followUp(gm, uint16(i), t1, 0), now.Add(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if ex != nil {
			if ex.OffsetNS != ex.T2-ex.T1-ex.PathDelayNS {
				t.Fatalf("Sync %d: raw offset %d is not t2 - t1 - path delay", i, ex.OffsetNS)
			}
			if ex.SyncOutlier != (i == held) {
				t.Errorf("Sync %d: flagged %v", i, ex.SyncOutlier)
			}
			if ex.Filtered && settled < 0 {
				settled = i
			}
			if settled >= 0 && !ex.Filtered {
				t.Errorf("Sync %d: no filtered offset after the first at %d", i, settled)
			}
			if ex.Filtered && (ex.FilteredOffsetNS < -500 || ex.FilteredOffsetNS > 500) {
				t.Errorf("Sync %d: filtered offset %d ns, the truth is 0 (raw %d, flagged %v)", i, ex.FilteredOffsetNS, ex.OffsetNS, ex.SyncOutlier)
			}
			if i == held && ex.OffsetNS < 25_000 {
				t.Errorf("the held-up Sync's raw offset %d ns: not reported as measured", ex.OffsetNS)
			}
		}
		req, err := s.DelayReq(make([]byte, 64), now.Add(200*time.Millisecond))
		if err != nil {
			continue // a Delay_Req is still out
		}
		t3 := t1 + 200_000_000
		s.Sent(t3)
		seq := uint16(req[30])<<8 | uint16(req[31])
		if _, err := s.General(delayResp(gm, seq, us, t3+6000+rng.Int64N(400), 0), now.Add(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	// The first Delay_Resp comes after Sync 0, so the tenth delay is in
	// the filter by Sync 10.
	if settled < 10 || settled > 11 {
		t.Errorf("first filtered offset at Sync %d, want 10 or 11 (the delay filter full)", settled)
	}
}
