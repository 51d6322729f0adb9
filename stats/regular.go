package stats

import "fmt"

// CheckRegular checks that timestamps t (ns) form a regularly sampled
// series: every interval t[i]-t[i-1] lies within tau0/2 of tau0, so each
// sample owns one slot of the nominal grid. It returns nil, or an
// *IrregularError (wrapping ErrIrregular) for the first interval that does
// not: out of order, duplicate, too early or a gap.
func CheckRegular(t []int64, tau0 int64) error {
	if tau0 <= 0 {
		return fmt.Errorf("stats: check regular: tau0 %d ns, want > 0", tau0)
	}
	for i := 1; i < len(t); i++ {
		if err := checkStep(t, i, tau0); err != nil {
			return fmt.Errorf("stats: check regular: %w", err)
		}
	}
	return nil
}

func checkStep(t []int64, i int, tau0 int64) *IrregularError {
	d := t[i] - t[i-1]
	if (t[i] < t[i-1]) != (d < 0) { // overflow: never regular
		return &IrregularError{Index: i, Delta: d, Tau0: tau0}
	}
	if d <= 0 || d < tau0-tau0/2 || d > tau0+tau0/2 {
		return &IrregularError{Index: i, Delta: d, Tau0: tau0}
	}
	return nil
}

// Segment is a half-open index range [Start, End) of a series.
type Segment struct{ Start, End int }

// SplitRegular cuts timestamps t (ns) at every gap into maximal regular
// segments (intervals within tau0/2 of tau0), for analysing each with the
// stability functions. Out-of-order or duplicate timestamps are not gaps:
// they fail with an *IrregularError.
func SplitRegular(t []int64, tau0 int64) ([]Segment, error) {
	if tau0 <= 0 {
		return nil, fmt.Errorf("stats: split regular: tau0 %d ns, want > 0", tau0)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("stats: split regular: %w", ErrEmpty)
	}
	var segs []Segment
	start := 0
	for i := 1; i < len(t); i++ {
		e := checkStep(t, i, tau0)
		if e == nil {
			continue
		}
		if t[i] <= t[i-1] {
			return nil, fmt.Errorf("stats: split regular: %w", e)
		}
		segs = append(segs, Segment{start, i})
		start = i
	}
	return append(segs, Segment{start, len(t)}), nil
}
