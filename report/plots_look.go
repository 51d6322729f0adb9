//go:build !arm

package report

// What the report adds to stats' plots: the CDF's quantile marks each in
// its own look, the drift line with its value in the report's units, τ
// labelled as the tables print it (FormatTau), and the deviations' 68 %
// intervals and non-overlapping terms.

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/monagent/monagent/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The colours of stats' plots, so that a curve's bars match it.
var (
	colData = color.RGBA{R: 30, G: 80, B: 160, A: 255}
	colFit  = color.RGBA{R: 200, G: 40, B: 40, A: 255}
)

// markStyle is how the CDF draws a quantile mark: p75, p95 and p99 each
// with its own colour, dash and glyph, so that they read apart in colour
// and in grey.
type markStyle struct {
	color  color.Color
	dashes []vg.Length
	shape  draw.GlyphDrawer
}

var markStyles = []markStyle{
	{color.RGBA{R: 40, G: 150, B: 60, A: 255}, []vg.Length{vg.Points(1.5), vg.Points(2.5)}, draw.CircleGlyph{}},                         // p75: dotted
	{color.RGBA{R: 230, G: 130, B: 0, A: 255}, []vg.Length{vg.Points(6), vg.Points(3)}, draw.TriangleGlyph{}},                           // p95: dashed
	{color.RGBA{R: 200, G: 40, B: 40, A: 255}, []vg.Length{vg.Points(9), vg.Points(3), vg.Points(2), vg.Points(3)}, draw.SquareGlyph{}}, // p99: dash-dot
}

// cdfPlot is stats.PlotCDF with each mark in its own look (markStyles): a
// vertical line from 0 to its level and a glyph where it meets the CDF,
// with a legend entry each.
func cdfPlot(pts []stats.CDFPoint, marks []stats.Quantile, xlabel, title string) (plotT, error) {
	p, err := stats.PlotCDF(pts, nil, xlabel, title)
	if err != nil {
		return nil, err
	}
	maxAbs := 0.0
	for _, q := range pts {
		maxAbs = math.Max(maxAbs, math.Abs(q.X))
	}
	_, div := stats.TimeUnit(maxAbs) // as PlotCDF scales x
	for i, m := range marks {
		st := markStyles[i%len(markStyles)]
		x := m.Value / div
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: m.P}})
		if err != nil {
			continue
		}
		l.Color, l.Width, l.Dashes = st.color, vg.Points(1.5), st.dashes
		g, err := plotter.NewScatter(plotter.XYs{{X: x, Y: m.P}})
		if err != nil {
			continue
		}
		g.Color, g.Shape, g.Radius = st.color, st.shape, vg.Points(3.5)
		p.Add(l, g)
		p.Legend.Add(fmt.Sprintf("p%s = %s", strconv.FormatFloat(m.P*100, 'f', -1, 64), stats.FormatNS(m.Value)), l, g)
	}
	return p, nil
}

// offsetPlot is stats.PlotOffset with the drift line drawn here, its legend
// in FormatDrift's units ("drift 15 ppb [14.98, 15.02] (95 %)").
func offsetPlot(t, x []int64, d *stats.Drift, ylabel, title string) (plotT, error) {
	p, err := stats.PlotOffset(t, x, nil, ylabel, title)
	if err != nil || d == nil {
		return p, err
	}
	var maxAbs float64
	for _, v := range x {
		maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
	}
	_, div := stats.TimeUnit(maxAbs) // as PlotOffset scales y
	tdiv, ok := axisDiv(p.X.Label.Text)
	if !ok {
		return nil, fmt.Errorf("plot offset: time axis %q: unknown unit", p.X.Label.Text)
	}
	end := t[len(t)-1]
	dl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: d.Predict(t[0]) / div}, {X: float64(end-t[0]) / tdiv, Y: d.Predict(end) / div}})
	if err != nil {
		return nil, fmt.Errorf("plot offset: drift: %w", err)
	}
	dl.Color, dl.Width = colFit, vg.Points(1.5)
	dl.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(dl)
	half := (d.SlopeHighPPM - d.SlopeLowPPM) / 2
	p.Legend.Add("drift "+FormatDrift(d.SlopePPM, half)+" (95 %)", dl)
	return p, nil
}

// axisDiv is the ns per unit of stats.PlotOffset's time axis, read from its
// label "time since first sample (UNIT)".
func axisDiv(label string) (float64, bool) {
	i := strings.LastIndex(label, "(")
	if i < 0 || !strings.HasSuffix(label, ")") {
		return 0, false
	}
	div, ok := map[string]float64{"s": 1e9, "min": 60e9, "h": 3600e9, "d": 86400e9}[label[i+1:len(label)-1]]
	return div, ok
}

// tauTicks labels a τ axis with FormatTau, keeping the ticks (and which of
// them are labelled) of the axis' own marker.
type tauTicks struct{ plot.Ticker }

// Ticks implements plot.Ticker.
func (tt tauTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := tt.Ticker.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = FormatTau(ts[i].Value)
		}
	}
	return ts
}

// devCurve is one stability curve: its name and points (Point carries n and
// the interval).
type devCurve struct {
	name   string
	points []Point
}

// stabilityPlot is stats.PlotStability with τ labelled by FormatTau, each
// point's 68 % interval as an error bar (one reaching the axis' bottom
// bounds nothing below: a single non-overlapping term) and, beside the
// first curve's points, their non-overlapping terms.
func stabilityPlot(curves []devCurve, ylabel, title string, ns bool) (plotT, error) {
	sc := make([]stats.Curve, len(curves))
	for i, c := range curves {
		name := c.name
		if hasCI(c.points) {
			name += ", ±1σ (68 %) bars"
		}
		sc[i] = stats.Curve{Name: name, Points: toDev(c.points)}
	}
	p, err := stats.PlotStability(sc, ylabel, title, ns)
	if err != nil {
		return nil, err
	}
	p.X.Tick.Marker = tauTicks{p.X.Tick.Marker}
	// A bar that bounds nothing below (K = 1) reaches the plot's bottom:
	// below every other point and bar.
	floor := p.Y.Min
	for _, c := range curves {
		for _, pt := range c.points {
			if pt.Value > 0 {
				floor = math.Min(floor, pt.Value)
			}
			if len(pt.CI) == 2 && pt.CI[0] > 0 {
				floor = math.Min(floor, pt.CI[0])
			}
		}
	}
	floor /= 2
	cols := []color.Color{colData, colFit}
	for i, c := range curves {
		var xy plotter.XYs
		var ye plotter.YErrors
		var lab []string
		for _, pt := range c.points {
			if pt.Value <= 0 || pt.TauS <= 0 {
				continue // not drawn on a log axis
			}
			xy = append(xy, plotter.XY{X: pt.TauS, Y: pt.Value})
			lab = append(lab, strconv.Itoa(pt.NonOverlapping))
			if len(pt.CI) == 2 {
				lo := pt.CI[0]
				if lo <= 0 {
					lo = floor
				}
				ye = append(ye, struct{ Low, High float64 }{pt.Value - lo, pt.CI[1] - pt.Value})
			}
		}
		if len(xy) == 0 {
			continue
		}
		if len(ye) == len(xy) {
			bars, err := plotter.NewYErrorBars(errPoints{xy, ye})
			if err != nil {
				return nil, fmt.Errorf("plot %s: error bars: %w", c.name, err)
			}
			bars.Color, bars.Width, bars.CapWidth = cols[i%len(cols)], vg.Points(1), vg.Points(5)
			p.Add(bars)
		}
		if i == 0 {
			ls, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: lab})
			if err != nil {
				return nil, fmt.Errorf("plot %s: labels: %w", c.name, err)
			}
			for j := range ls.TextStyle {
				ls.TextStyle[j].Color = color.Gray{Y: 80}
				ls.TextStyle[j].Font.Size = vg.Points(8)
			}
			ls.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(3)}
			p.Add(ls)
			p.Legend.Add("numbers beside the " + strings.Fields(c.name)[0] + " points: K, their non-overlapping terms")
		}
	}
	return p, nil
}

// errPoints are points with their error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

func hasCI(ps []Point) bool {
	for _, p := range ps {
		if len(p.CI) == 2 {
			return true
		}
	}
	return false
}
