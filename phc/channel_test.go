package phc

import (
	"testing"

	"github.com/monagent/monagent/timebase"
)

func TestDeviceDomain(t *testing.T) {
	for path, want := range map[string]timebase.Domain{"/dev/ptp0": timebase.PHC(0), "/x/ptp12/": timebase.PHC(12), "ptp3": timebase.PHC(3)} {
		if d, err := DeviceDomain(path); d != want || err != nil {
			t.Errorf("%s: %v %v", path, d, err)
		}
	}
	for _, path := range []string{"/dev/rtc0", "/dev/ptp", "/dev/ptp-1", "/dev/ptpx"} {
		if d, err := DeviceDomain(path); err == nil {
			t.Errorf("%s: %v", path, d)
		}
	}
}

// ParseEdges takes back what Edge.String gives for the edges one enables.
func TestParseEdges(t *testing.T) {
	for _, e := range []Edge{EdgeRising, EdgeFalling, EdgeBoth} {
		if got, err := ParseEdges(e.String()); got != e || err != nil {
			t.Errorf("%v: %v %v", e, got, err)
		}
	}
	if _, err := ParseEdges("unknown"); err == nil || err.Error() != `unknown extts edges "unknown" (want rising, falling or both)` {
		t.Errorf("unknown: %v", err)
	}
}

// A stamp's edge is the driver's when it says, else the channel's single one.
func TestEdgeOf(t *testing.T) {
	for _, tc := range []struct {
		chanEdges, flags Edge
		want             Edge
	}{
		{EdgeBoth, 0, 0}, {EdgeBoth, EdgeFalling | 1, EdgeFalling}, {EdgeFalling, 0, EdgeFalling},
		{0, 0, EdgeRising}, {EdgeRising, EdgeFalling, EdgeFalling}, {EdgeBoth, EdgeBoth, 0},
	} {
		c, e := ExttsChannel{Edges: tc.chanEdges}, ExttsEvent{Flags: uint32(tc.flags)}
		if got := c.EdgeOf(&e); got != tc.want {
			t.Errorf("channel %v, flags %#x: %v, want %v", tc.chanEdges, tc.flags, got, tc.want)
		}
	}
}

// Totals over two readers, the second counting from zero again: only what
// each added counts, and the missed edges each adds are returned.
func TestExttsTotals(t *testing.T) {
	var tot ExttsTotals
	var zero ExttsStats
	a1 := ExttsStats{Events: 10, Reads: 4, FullReads: 1, MissedEdges: 2, Backwards: 1, OtherChannels: 3}
	a2 := ExttsStats{Events: 12, Reads: 5, FullReads: 1, MissedEdges: 2, Backwards: 1, OtherChannels: 3}
	b1 := ExttsStats{Events: 5, Reads: 1, MissedEdges: 7}
	for i, step := range []struct {
		prev, cur ExttsStats
		missed    uint64
	}{{zero, a1, 2}, {a1, a2, 0}, {zero, b1, 7}} {
		if m := tot.Add(step.prev, step.cur); m != step.missed {
			t.Errorf("step %d: %d missed, want %d", i, m, step.missed)
		}
	}
	if got, want := tot.Stats(), (ExttsStats{Events: 17, Reads: 6, FullReads: 1, MissedEdges: 9, Backwards: 1, OtherChannels: 3}); got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
}
