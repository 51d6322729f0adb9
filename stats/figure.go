//go:build !arm

package stats

// How the plots are laid out and labeled so that a person can read them:
// a margin round the figure (a title is not cut at the top), each legend
// below its plot rather than on its data, panels stacked with their data
// areas aligned, log axes marked at every decade with labels in units, and
// lines broken at gaps in time.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figureMargin is left blank round a figure.
const figureMargin = vg.Length(8)

// drawFigure draws panels stacked top to bottom into c, each of an equal
// share of the height, with its legend under its x axis, outside the data,
// and their data areas aligned left and right (panels share a time axis).
func drawFigure(c draw.Canvas, panels []*plot.Plot) {
	c = draw.Crop(c, figureMargin, -figureMargin, figureMargin, -figureMargin)
	h := (c.Max.Y - c.Min.Y) / vg.Length(len(panels))
	tiles, legH := make([]draw.Canvas, len(panels)), make([]vg.Length, len(panels))
	var left, right vg.Length
	for i, p := range panels {
		tile := c
		tile.Max.Y = c.Max.Y - vg.Length(i)*h
		tile.Min.Y = tile.Max.Y - h
		p.Legend.Padding = 2
		if r := p.Legend.Rectangle(tile); r.Size().Y > 0 {
			legH[i] = r.Size().Y + 6
		}
		tiles[i] = draw.Crop(tile, 0, 0, legH[i], 0)
		legend := p.Legend
		p.Legend = plot.NewLegend()
		d := p.DataCanvas(tiles[i])
		p.Legend = legend
		left, right = max(left, d.Min.X-tiles[i].Min.X), max(right, tiles[i].Max.X-d.Max.X)
	}
	for i, p := range panels {
		d := p.DataCanvas(tiles[i])
		pc := draw.Crop(tiles[i], left-(d.Min.X-tiles[i].Min.X), -(right - (tiles[i].Max.X - d.Max.X)), 0, 0)
		legend := p.Legend
		p.Legend = plot.NewLegend()
		p.Draw(pc)
		p.Legend = legend
		if legH[i] == 0 {
			continue
		}
		lc := pc
		lc.Min.X += left
		lc.Max.Y, lc.Min.Y = tiles[i].Min.Y, tiles[i].Min.Y-legH[i]
		legend.Top, legend.Left = true, true
		legend.Draw(lc)
	}
}

// logTicks marks a log axis: every decade in range, labeled with format,
// and the multiples 2..9 between as minor ticks. A range holding fewer than
// three decades gets labels at the 2, 3 and 5 multiples too, and one that
// still has fewer than three labels (41 to 46 ns) gets the linear ticks of
// plot.DefaultTicks, labeled, so no axis is left with one number.
type logTicks struct{ format func(float64) string }

// Ticks implements plot.Ticker.
func (lt logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || hi < lo || math.IsInf(hi, 0) {
		return nil
	}
	inRange := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	var ticks []plot.Tick
	labels := func(ks ...int) int {
		n := 0
		for i := range ticks {
			if slices.Contains(ks, mantissa(ticks[i].Value)) {
				ticks[i].Label = lt.format(ticks[i].Value)
			}
			if ticks[i].Label != "" {
				n++
			}
		}
		return n
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		d := math.Pow(10, e)
		for k := 1; k <= 9; k++ {
			if v := float64(k) * d; inRange(v) {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	if labels(1) >= 3 || labels(1, 2, 3, 5) >= 3 {
		return ticks
	}
	ticks = ticks[:0]
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value <= 0 || !inRange(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = lt.format(t.Value)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// mantissa is k of a value k × 10^e, k = 1..9 (rounded).
func mantissa(v float64) int {
	return int(math.Round(v / math.Pow(10, math.Floor(math.Log10(v)+1e-9))))
}

// niceLogRange widens [lo, hi] to the multiples 1, 2, 3 or 5 of a power of
// ten round it, so the ends of a log axis are labeled; a range narrower
// than a factor of 3 is kept (its linear ticks label it).
func niceLogRange(lo, hi float64) (float64, float64) {
	if lo <= 0 || hi/lo < 3 {
		return lo, hi
	}
	steps := []float64{1, 2, 3, 5, 10}
	e := math.Pow(10, math.Floor(math.Log10(lo)+1e-9))
	nlo := e
	for _, k := range steps {
		if k*e <= lo*(1+1e-9) {
			nlo = k * e
		}
	}
	e = math.Pow(10, math.Floor(math.Log10(hi)+1e-9))
	nhi := 10 * e
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i]*e >= hi*(1-1e-9) {
			nhi = steps[i] * e
		}
	}
	return nlo, nhi
}

// linearTicks is plot.DefaultTicks with its labels in units (format).
type linearTicks struct{ format func(float64) string }

// Ticks implements plot.Ticker.
func (lt linearTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := (plot.DefaultTicks{}).Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = lt.format(ticks[i].Value)
		}
	}
	return ticks
}

// formatPlain labels a value with up to 4 significant digits (125, -75,
// 0.25), not DefaultTicks' fixed decimals (125.00).
func formatPlain(v float64) string {
	if math.Abs(v) < 1e-12 {
		v = 0
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// formatSeconds labels a time in s: 100 ms, 1 s, 10 s, 1000 s, 10⁴ s.
func formatSeconds(v float64) string {
	if v >= 1e4 {
		return formatPow10(v) + " s"
	}
	return FormatNS(v * 1e9)
}

// formatPow10 labels a dimensionless value: values from 0.01 to 1000
// plainly, others as 1e-9, 2e-9 (the plots' font has no superscript minus).
func formatPow10(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	if a := math.Abs(v); a >= 0.01 && a < 1000 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v, 'e', 2, 64) // 2.50e-09
	m, e, _ := strings.Cut(s, "e")
	m = strings.TrimSuffix(strings.TrimRight(m, "0"), ".")
	sign := e[:1]
	e = strings.TrimLeft(e[1:], "0")
	if sign == "+" {
		sign = ""
	}
	return m + "e" + sign + e
}

// timeAxis picks the unit of a time axis spanning span ns: s below 10
// minutes, min below 2 hours, h below 2 days, else d; and its divisor.
func timeAxis(span int64) (name string, div float64) {
	return pickUnit(axisUnits[:], float64(span))
}

// axisUnits are timeAxis's units.
var axisUnits = [...]unit{{600e9, "s", 1e9}, {7200e9, "min", 60e9}, {172800e9, "h", 3600e9}, {math.Inf(1), "d", 86400e9}}

// gapSegments cuts sorted times t where an interval exceeds 3 times the
// median interval (a gap between runs, not a lost sample or two), so that
// no line is drawn across it.
func gapSegments(t []int64) []Segment {
	if len(t) < 3 {
		return []Segment{{0, len(t)}}
	}
	d := make([]int64, len(t)-1)
	for i := range d {
		d[i] = t[i+1] - t[i]
	}
	slices.Sort(d)
	limit := 3 * max(d[len(d)/2], 1)
	var segs []Segment
	start := 0
	for i := 1; i < len(t); i++ {
		if t[i]-t[i-1] > limit {
			segs = append(segs, Segment{start, i})
			start = i
		}
	}
	return append(segs, Segment{start, len(t)})
}
