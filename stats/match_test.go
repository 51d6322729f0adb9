package stats

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// boards makes a square wave's edges as two boards stamp them: B's clock is
// offset by off ns, B's interrupts come delta ns later than A's, each stamp
// has up to ±jitter ns, and some edges are missed on either side.
func boards(n int, off, delta, jitter int64, missA, missB map[int]bool) (a, b []int64) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		t := int64(1e9) + int64(i)*1_000_000 // 1 kHz
		if !missA[i] {
			a = append(a, t+rng.Int64N(2*jitter+1)-jitter)
		}
		if !missB[i] {
			b = append(b, t+off+delta+rng.Int64N(2*jitter+1)-jitter)
		}
	}
	return a, b
}

func TestMatchAndOffsets(t *testing.T) {
	const off, delta, jitter = 3_000, 1_500, 200
	a, b := boards(1000, off, delta, jitter, map[int]bool{10: true, 500: true}, map[int]bool{20: true, 21: true, 999: true})
	m, err := Match(a, b, 400_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pairs) != 995 || m.UnmatchedA != 3 || m.UnmatchedB != 2 {
		t.Fatalf("%d pairs, %d of A and %d of B unmatched; want 995, 3, 2", len(m.Pairs), m.UnmatchedA, m.UnmatchedB)
	}
	for _, p := range m.Pairs {
		if d := p.B - p.A; d < off+delta-2*jitter || d > off+delta+2*jitter {
			t.Fatalf("pair %+v: %d ns apart, not the same edge", p, d)
		}
	}
	// The ISR difference from a calibration capture on one clock.
	ca, cb := boards(200, 0, delta, jitter, nil, nil)
	cal, err := Match(ca, cb, 400_000)
	if err != nil {
		t.Fatal(err)
	}
	est, err := EstimateDelta(cal)
	if err != nil {
		t.Fatal(err)
	}
	if est < delta-100 || est > delta+100 {
		t.Errorf("estimated ΔISR %d ns, want %d ± 100", est, delta)
	}
	s, err := Summarize(m.Offsets(est), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mean < off-100 || s.Mean > off+100 {
		t.Errorf("mean offset %.0f ns, want %d ± 100 (eq. 3 with the estimated ΔISR)", s.Mean, off)
	}
}

func TestMatchWindowAndBadInput(t *testing.T) {
	// Further apart than the window: nothing pairs.
	m, err := Match([]int64{0, 1000}, []int64{600, 1700}, 500)
	if err != nil || len(m.Pairs) != 1 || m.Pairs[0] != (Matched{1000, 600}) || m.UnmatchedA != 1 || m.UnmatchedB != 1 {
		t.Errorf("window 500: %+v, %v", m, err)
	}
	// Only mutual nearest events pair: B's 10 is nearest to A's 9, so A's 0 stays alone.
	m, _ = Match([]int64{0, 9}, []int64{10}, 100)
	if len(m.Pairs) != 1 || m.Pairs[0] != (Matched{9, 10}) || m.UnmatchedA != 1 {
		t.Errorf("mutual nearest: %+v", m)
	}
	if m, err := Match(nil, []int64{1}, 10); err != nil || len(m.Pairs) != 0 || m.UnmatchedB != 1 {
		t.Errorf("empty A: %+v, %v", m, err)
	}
	var ie *IrregularError
	if _, err := Match([]int64{1, 3, 2}, nil, 10); !errors.As(err, &ie) || ie.Index != 2 {
		t.Errorf("unsorted A: %v", err)
	}
	if _, err := Match(nil, []int64{5, 5}, 10); !errors.As(err, &ie) || ie.Index != 1 || !errors.Is(err, ErrIrregular) {
		t.Errorf("duplicate in B: %v", err)
	}
	if _, err := Match(nil, nil, 0); err == nil {
		t.Error("window 0 accepted")
	}
	if _, err := EstimateDelta(Matching{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("EstimateDelta of nothing: %v", err)
	}
}
