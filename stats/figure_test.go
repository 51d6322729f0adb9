//go:build !arm

package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func labels(ts []plot.Tick) []string {
	var out []string
	for _, t := range ts {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// TestLogTicksReadable: a TDEV of 41 to 46 ns was labeled "10" alone; every
// log axis now has at least three labels in units, and a wide one a label at
// every decade.
func TestLogTicksReadable(t *testing.T) {
	for _, c := range []struct {
		name   string
		ticker logTicks
		lo, hi float64
		want   []string // labels, in order; nil: only check count and unit
		unit   string
	}{
		{"TDEV 41-46 ns", logTicks{FormatNS}, 41, 46, nil, " ns"},
		{"ADEV four decades", logTicks{formatPow10}, 1e-10, 1e-7, []string{"1e-10", "1e-9", "1e-8", "1e-7"}, ""},
		{"tau 0.1-3.2 s", logTicks{formatSeconds}, 0.1, 3.2, []string{"100 ms", "200 ms", "300 ms", "500 ms", "1 s", "2 s", "3 s"}, ""},
		{"tau a day", logTicks{formatSeconds}, 1, 86400, []string{"1 s", "10 s", "100 s", "1000 s", "1e4 s"}, ""},
		{"MTIE 2-50 ns", logTicks{FormatNS}, 2, 50, []string{"2 ns", "3 ns", "5 ns", "10 ns", "20 ns", "30 ns", "50 ns"}, ""},
	} {
		got := labels(c.ticker.Ticks(c.lo, c.hi))
		if c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("%s: labels %q, want %q", c.name, got, c.want)
		}
		if len(got) < 3 {
			t.Errorf("%s: %d labels %q, want >= 3", c.name, len(got), got)
		}
		for _, l := range got {
			if !strings.HasSuffix(l, c.unit) {
				t.Errorf("%s: label %q lacks %q", c.name, l, c.unit)
			}
		}
	}
	// Through PlotStability: the axis range it sets gets the labels.
	p, err := PlotStability([]Curve{{"TDEV", []Deviation{{Tau: 1e9, Value: 41}, {Tau: 2e9, Value: 46}}}}, "TDEV", "t", true)
	if err != nil {
		t.Fatal(err)
	}
	if l := labels(p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)); len(l) < 3 || !strings.HasSuffix(l[0], " ns") {
		t.Errorf("TDEV 41-46 ns plot: y labels %q", l)
	}
	if lo, hi := niceLogRange(2.3, 27); lo != 2 || hi != 30 {
		t.Errorf("nice range of 2.3..27: %g..%g", lo, hi)
	}
	if lo, hi := niceLogRange(41, 46); lo != 41 || hi != 46 {
		t.Errorf("narrow range widened: %g..%g", lo, hi)
	}
}

func TestFormatPow10(t *testing.T) {
	for v, want := range map[float64]string{1e-9: "1e-9", 2.5e-10: "2.5e-10", 0.5: "0.5", 300: "300", 1e5: "1e5"} {
		if got := formatPow10(v); got != want {
			t.Errorf("formatPow10(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestGapSegments: the offset plot breaks its line between runs, not at a
// sample or two lost.
func TestGapSegments(t *testing.T) {
	var ts []int64
	for i := range 100 {
		if i == 40 || i == 41 { // two lost samples: no gap
			continue
		}
		ts = append(ts, int64(i)*1e9)
	}
	for i := range 50 {
		ts = append(ts, 500e9+int64(i)*1e9) // a second run
	}
	segs := gapSegments(ts)
	if len(segs) != 2 || segs[0] != (Segment{0, 98}) || segs[1] != (Segment{98, 148}) {
		t.Errorf("segments %v", segs)
	}
	if s := gapSegments(ts[:2]); len(s) != 1 {
		t.Errorf("two samples: %v", s)
	}
	// The plot of the two runs draws, and says why its line breaks.
	x := make([]int64, len(ts))
	p, err := PlotOffset(ts, x, nil, "offset", "two runs")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "o.svg")
	if err := SavePlot(p, PlotWidth, PlotHeight, f); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	if !strings.Contains(string(b), "2 runs: the line breaks at gaps") {
		t.Error("the legend does not say the line breaks")
	}
}

// TestLegendBelowData: SavePlot draws the legend under the x axis, so the
// data area's top right corner is free, and the title keeps a margin.
func TestLegendBelowData(t *testing.T) {
	acc, _ := NewAccumulator(Config{})
	for i := range 1000 {
		acc.Add(int64(i % 37))
	}
	h, _ := acc.Histogram(10)
	p, err := PlotHistogram(h, "offset", "histogram")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "h.svg")
	if err := SavePlot(p, PlotWidth, PlotHeight, f); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(f)
	s := string(svg)
	// Heights from the bottom of the figure (vg's y, up).
	legend, xlabel, title := textHeight(t, s, "normal fit"), textHeight(t, s, "offset (ns)"), textHeight(t, s, "histogram")
	if legend >= xlabel {
		t.Errorf("legend at %g pt, x label at %g pt: the legend is not below the axis", legend, xlabel)
	}
	if top := float64(PlotHeight - figureMargin); title > top {
		t.Errorf("title at %g pt, in the top margin (above %g)", title, top)
	}
}

// textHeight is the height (pt, from the bottom) of the first SVG text
// element starting with s; vgsvg writes y negated, in a flipped group.
func textHeight(t *testing.T, svg, s string) float64 {
	t.Helper()
	i := strings.Index(svg, ">"+s)
	if i < 0 {
		t.Fatalf("no text %q in the SVG", s)
	}
	tag := svg[strings.LastIndex(svg[:i], "<text"):i]
	var x, y float64
	if _, err := fmt.Sscanf(tag, `<text x="%g" y="%g"`, &x, &y); err != nil {
		t.Fatalf("text %q: %v in %s", s, err, tag)
	}
	return -y
}
