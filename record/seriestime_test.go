package record

import "testing"

// SeriesTime moves a time its series already has to the first free
// nanosecond after it, counted; a time that collides with nothing stays,
// however it stands to the others (barely before the last, long before it,
// equal to a record of another series).
func TestSeriesTime(t *testing.T) {
	var st SeriesTime
	var c TimeCounts
	for i, tc := range []struct{ in, want int64 }{
		{1000, 1000}, {1000, 1001}, {1000, 1002}, {1500, 1500},
		{1499, 1499},        // before the last, but free: kept (it moved to 1501 before)
		{1001, 1003},        // equal to a moved one: past 1002 too
		{1000, 1004},        // equal to an earlier, not the last
		{1500 - 2000, -500}, // a clock stepped back: kept
		{-500, -499},
	} {
		if got := st.Place(tc.in, &c); got != tc.want {
			t.Fatalf("step %d: %d -> %d, want %d", i, tc.in, got, tc.want)
		}
	}
	if c.Bumps != 5 || c.Unchecked != 0 {
		t.Fatalf("%+v, want 5 bumps and nothing unchecked", c)
	}
}

// Past SeriesRecent times a series lets its oldest go: a time after every
// one let go is still checked exactly; one at or before the latest let go
// cannot be, and is shipped as it is and counted.
func TestSeriesTimeLetsGoAndCounts(t *testing.T) {
	last := int64(100 + 10*SeriesRecent) // 100, 110, ... last placed: 100 let go
	for _, tc := range []struct {
		in, want         int64
		bumps, unchecked uint64
	}{
		{110, 111, 1, 0},       // held: moved, and 111 is after 100
		{100, 100, 0, 1},       // the one let go: not seen, counted
		{95, 95, 0, 1},         // before it: unknown, counted
		{105, 105, 0, 0},       // after every time let go, free
		{last, last + 1, 1, 0}, // the last
	} {
		var st SeriesTime
		var c TimeCounts
		for ns := int64(100); ns <= last; ns += 10 {
			st.Place(ns, &c)
		}
		if c != (TimeCounts{}) || !st.letGone || st.gone != 100 {
			t.Fatalf("placing %d in order: %+v, let go %v (%d)", SeriesRecent+1, c, st.letGone, st.gone)
		}
		if got := st.Place(tc.in, &c); got != tc.want || c != (TimeCounts{tc.bumps, tc.unchecked}) {
			t.Errorf("%d -> %d %+v, want %d (%d bumps, %d unchecked)", tc.in, got, c, tc.want, tc.bumps, tc.unchecked)
		}
	}
}

// Placing a time allocates nothing: it runs for every event.
func TestSeriesTimeDoesNotAllocate(t *testing.T) {
	var st SeriesTime
	var c TimeCounts
	var ns int64
	if a := testing.AllocsPerRun(1000, func() { ns++; st.Place(ns/2, &c) }); a != 0 {
		t.Fatalf("%v allocations per record", a)
	}
}
