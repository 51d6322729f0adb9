package stats

import (
	"fmt"
	"slices"
)

// Matched is one event seen by two boards: its time on the reference board
// (A) and on the other (B), ns.
type Matched struct {
	A, B int64
}

// Matching is the result of pairing two event streams.
type Matching struct {
	Pairs      []Matched
	UnmatchedA int // events of A with no event of B within the window
	UnmatchedB int // events of B left over
}

// Match pairs the events of two boards fed by one trigger (a square wave on
// a GPIO line of each, a PPS) by nearest time: an event of A and one of B
// are paired when each is the other's nearest and they are at most window
// ns apart, so a missed edge on either side costs one pair, not a shift of
// every later one. a and b must be sorted and free of duplicates (an error
// names the first index that is not); the window should be under half the
// trigger's period.
func Match(a, b []int64, window int64) (Matching, error) {
	if window <= 0 {
		return Matching{}, fmt.Errorf("match: window %d ns: must be positive", window)
	}
	for name, s := range map[string][]int64{"a": a, "b": b} {
		if i := firstNotIncreasing(s); i > 0 {
			return Matching{}, fmt.Errorf("match: events %s: %w", name, &IrregularError{Index: i, Delta: s[i] - s[i-1]})
		}
	}
	var m Matching
	usedB := 0
	for i, ta := range a {
		j := nearest(b, ta)
		if j < 0 || abs64(b[j]-ta) > window {
			m.UnmatchedA++
			continue
		}
		// Mutual nearest: b[j]'s nearest in a must be ta.
		if k := nearest(a, b[j]); k != i {
			m.UnmatchedA++
			continue
		}
		m.Pairs = append(m.Pairs, Matched{A: ta, B: b[j]})
		usedB++
	}
	m.UnmatchedB = len(b) - usedB
	return m, nil
}

// Offsets returns each pair's offset of B against A as the reference study
// defines it (its eq. 3): offset = TS_B − (TS_A + deltaISR), where deltaISR
// is the difference of the two boards' interrupt latencies (B's minus A's),
// given, or measured with EstimateDelta.
func (m Matching) Offsets(deltaISR int64) []int64 {
	out := make([]int64, len(m.Pairs))
	for i, p := range m.Pairs {
		out[i] = p.B - (p.A + deltaISR)
	}
	return out
}

// EstimateDelta estimates deltaISR from a calibration capture in which both
// inputs were stamped by one clock (the two lines of one board, or two
// boards whose clocks are known to agree): the median of TS_B − TS_A, which
// a few late interrupts do not move.
func EstimateDelta(calibration Matching) (int64, error) {
	if len(calibration.Pairs) == 0 {
		return 0, fmt.Errorf("estimate delta: %w", ErrEmpty)
	}
	d := calibration.Offsets(0)
	slices.Sort(d)
	n := len(d)
	if n%2 == 1 {
		return d[n/2], nil
	}
	return d[n/2-1] + (d[n/2]-d[n/2-1])/2, nil
}

// nearest is the index of the element of s nearest t (the earlier on a
// tie), -1 for an empty s.
func nearest(s []int64, t int64) int {
	if len(s) == 0 {
		return -1
	}
	j, _ := slices.BinarySearch(s, t)
	switch {
	case j == 0:
		return 0
	case j == len(s):
		return j - 1
	case s[j]-t < t-s[j-1]:
		return j
	}
	return j - 1
}

// firstNotIncreasing is the first index i with s[i] <= s[i-1], 0 if none.
func firstNotIncreasing(s []int64) int {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return i
		}
	}
	return 0
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
