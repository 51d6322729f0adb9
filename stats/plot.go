//go:build !arm

package stats

// Plots of the results of this package, drawn with gonum.org/v1/plot (pure
// Go: it builds with CGO_ENABLED=0 for every target). Unlike the rest of the
// package these functions import gonum's plot module; they are meant for
// monagent report, which writes each plot as PNG and SVG with SavePlot.
// They are left out of 32-bit ARM builds, the board's, to which gonum and
// its fonts would add 6.6 MB.

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Default plot size: 800 x 500 points, at 96 dpi for PNG.
const (
	PlotWidth  = 8 * vg.Inch
	PlotHeight = 5 * vg.Inch
)

var (
	colBars  = color.RGBA{R: 120, G: 160, B: 210, A: 255}
	colFit   = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	colData  = color.RGBA{R: 30, G: 80, B: 160, A: 255}
	colOther = color.RGBA{R: 40, G: 150, B: 60, A: 255}
)

// PlotHistogram draws h's bars and the fitted normal's density over them;
// xlabel names the quantity ("offset"), the unit is added.
func PlotHistogram(h Histogram, xlabel, title string) (*plot.Plot, error) {
	if len(h.Counts) == 0 || len(h.Edges) != len(h.Counts)+1 {
		return nil, errors.New("plot histogram: no bins")
	}
	unit, div := TimeUnit(math.Max(math.Abs(h.Edges[0]), math.Abs(h.Edges[len(h.Edges)-1])))
	p := newPlot(title)
	p.X.Label.Text = xlabel + " (" + unit + ")"
	p.Y.Label.Text = "samples per bin"
	bins := make([]plotter.HistogramBin, len(h.Counts))
	for i, c := range h.Counts {
		bins[i] = plotter.HistogramBin{Min: h.Edges[i] / div, Max: h.Edges[i+1] / div, Weight: float64(c)}
	}
	bars := &plotter.Histogram{Bins: bins, Width: (h.Edges[1] - h.Edges[0]) / div, FillColor: colBars, LineStyle: plotter.DefaultLineStyle}
	bars.LineStyle.Width = vg.Points(0.5)
	p.Add(bars)
	p.Legend.Add(fmt.Sprintf("samples (n = %d)", h.N), bars)
	if h.Sigma > 0 {
		fit := plotter.NewFunction(func(x float64) float64 { return h.Density(x * div) })
		fit.Samples = 200
		fit.Color, fit.Width = colFit, vg.Points(1.5)
		p.Add(fit)
		p.Legend.Add(fmt.Sprintf("normal fit: µ = %s, σ = %s", FormatNS(h.Mu), FormatNS(h.Sigma)), fit)
	}
	return p, nil
}

// PlotCDF draws an empirical CDF (the points of Accumulator.CDF) with dashed
// vertical marks at the given quantiles (e.g. p75, p95, p99).
func PlotCDF(pts []CDFPoint, marks []Quantile, xlabel, title string) (*plot.Plot, error) {
	if len(pts) == 0 {
		return nil, errors.New("plot cdf: no points")
	}
	maxAbs := 0.0
	for _, q := range pts {
		maxAbs = math.Max(maxAbs, math.Abs(q.X))
	}
	unit, div := TimeUnit(maxAbs)
	p := newPlot(title)
	p.X.Label.Text = xlabel + " (" + unit + ")"
	p.Y.Label.Text = "fraction of samples ≤ x"
	xy := make(plotter.XYs, 0, 2*len(pts))
	prevF := 0.0
	for _, q := range pts { // a step function
		xy = append(xy, plotter.XY{X: q.X / div, Y: prevF}, plotter.XY{X: q.X / div, Y: q.F})
		prevF = q.F
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, fmt.Errorf("plot cdf: %w", err)
	}
	l.Color, l.Width = colData, vg.Points(1.5)
	p.Add(l)
	p.Legend.Add("empirical CDF", l)
	for _, m := range marks {
		ml, err := plotter.NewLine(plotter.XYs{{X: m.Value / div, Y: 0}, {X: m.Value / div, Y: m.P}})
		if err != nil {
			continue
		}
		ml.Color, ml.Dashes = colFit, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ml)
		p.Legend.Add(fmt.Sprintf("p%g = %s", m.P*100, FormatNS(m.Value)), ml)
	}
	p.Y.Min, p.Y.Max = 0, 1.02
	p.Add(plotter.NewGrid())
	return p, nil
}

// PlotOffset draws offsets x (ns) against time t (ns, plotted since t[0]
// in s, min, h or d by the span) and, when d is not nil, the fitted drift
// line; ylabel names the quantity ("offset"), the unit is added. The line
// is broken at gaps (an interval over 3 times the median: between runs).
func PlotOffset(t, x []int64, d *Drift, ylabel, title string) (*plot.Plot, error) {
	if len(t) == 0 || len(t) != len(x) {
		return nil, errors.New("plot offset: no points")
	}
	var maxAbs float64
	for _, v := range x {
		maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
	}
	unit, div := TimeUnit(maxAbs)
	tunit, tdiv := timeAxis(t[len(t)-1] - t[0])
	p := newPlot(title)
	p.X.Label.Text = "time since first sample (" + tunit + ")"
	p.Y.Label.Text = ylabel + " (" + unit + ")"
	segs := gapSegments(t)
	points := len(t) <= 2000 // more would hide the line
	for i, g := range segs {
		buckets := max(1, maxOffsetPoints/2*(g.End-g.Start)/len(t))
		xy := decimate(t[g.Start:g.End], x[g.Start:g.End], div, buckets)
		off := float64(t[g.Start]-t[0]) / tdiv
		for j := range xy {
			xy[j].X = xy[j].X*1e9/tdiv + off
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plot offset: %w", err)
		}
		l.Color, s.Color = colData, colData
		s.GlyphStyle.Radius = vg.Points(1.5)
		if points {
			p.Add(l, s)
		} else {
			p.Add(l)
		}
		if i > 0 {
			continue
		}
		name := "offset"
		if len(segs) > 1 {
			name = fmt.Sprintf("offset (%d runs: the line breaks at gaps)", len(segs))
		}
		if points {
			p.Legend.Add(name, l, s)
		} else {
			p.Legend.Add(name, l)
		}
	}
	if d != nil {
		end := t[len(t)-1]
		dl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: d.Predict(t[0]) / div}, {X: float64(end-t[0]) / tdiv, Y: d.Predict(end) / div}})
		if err == nil {
			dl.Color, dl.Width = colFit, vg.Points(1.5)
			dl.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(dl)
			p.Legend.Add(fmt.Sprintf("drift %.4g ppm [%.4g, %.4g] (95 %%)", d.SlopePPM, d.SlopeLowPPM, d.SlopeHighPPM), dl)
		}
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// maxOffsetPoints bounds the points PlotOffset draws: more would only cost
// memory and time (a million samples took 400 MB) for the same pixels.
const maxOffsetPoints = 4000

// decimate returns (seconds since t[0], x/div) for every sample when there
// are at most 2 buckets of them, else the minimum and the maximum of each of
// buckets equal runs of samples, in time order, so the envelope (and every
// extreme) stays visible.
func decimate(t, x []int64, div float64, buckets int) plotter.XYs {
	return envelope(x, func(i int) plotter.XY { return plotter.XY{X: float64(t[i]-t[0]) / 1e9, Y: float64(x[i]) / div} }, buckets)
}

// envelope is decimate's walk over the values v, plotted by pt.
func envelope[V int64 | float64](v []V, pt func(i int) plotter.XY, buckets int) plotter.XYs {
	if len(v) <= 2*buckets {
		xy := make(plotter.XYs, len(v))
		for i := range v {
			xy[i] = pt(i)
		}
		return xy
	}
	xy := make(plotter.XYs, 0, 2*buckets)
	for b := range buckets {
		lo, hi := b*len(v)/buckets, (b+1)*len(v)/buckets
		mn, mx := lo, lo
		for i := lo; i < hi; i++ {
			if v[i] < v[mn] {
				mn = i
			}
			if v[i] > v[mx] {
				mx = i
			}
		}
		xy = append(xy, pt(min(mn, mx)), pt(max(mn, mx)))
	}
	return xy
}

// Curve is one named stability curve for PlotStability.
type Curve struct {
	Name   string
	Points []Deviation
}

// PlotStability draws stability curves (e.g. ADEV and MDEV, or TDEV and
// MTIE) on log-log axes against tau, both marked at every decade with
// labels in units (1 s, 10 s; 10 ns, 1 µs; 10⁻⁹); ns says the values are
// times in ns (TDEV, MTIE), else they are dimensionless (ADEV, MDEV);
// ylabel names them. Non-positive values cannot be drawn on a log axis and
// are left out.
func PlotStability(curves []Curve, ylabel, title string, ns bool) (*plot.Plot, error) {
	p := newPlot(title)
	p.X.Label.Text = "τ"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = logTicks{formatSeconds}
	p.Y.Tick.Marker = logTicks{formatPow10}
	if ns {
		p.Y.Tick.Marker = logTicks{FormatNS}
	}
	cols := []color.Color{colData, colFit, colOther}
	drawn := 0
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, c := range curves {
		var xy plotter.XYs
		for _, d := range c.Points {
			if d.Value > 0 && d.Tau > 0 {
				xy = append(xy, plotter.XY{X: d.TauSeconds(), Y: d.Value})
				xmin, xmax = min(xmin, d.TauSeconds()), max(xmax, d.TauSeconds())
				ymin, ymax = min(ymin, d.Value), max(ymax, d.Value)
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", c.Name, err)
		}
		l.Color, s.Color = cols[i%len(cols)], cols[i%len(cols)]
		p.Add(l, s)
		p.Legend.Add(c.Name, l, s)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("plot %s: %w: no positive values", title, ErrTooShort)
	}
	// One value on an axis (one tau, or one deviation everywhere): the
	// plotter would widen the range by ±1 into the negative, which a log
	// axis cannot draw; widen it by a factor instead.
	if xmin == xmax {
		p.X.Min, p.X.Max = xmin/2, xmax*2
	}
	if ymin == ymax {
		p.Y.Min, p.Y.Max = ymin/2, ymax*2
	} else {
		p.Y.Min, p.Y.Max = niceLogRange(ymin, ymax)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// newPlot is a plot with a title and room under it.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	return p
}

// SavePlot writes p to path as PNG (96 dpi) or SVG, by path's extension,
// with a margin round it and its legend below it, off the data.
func SavePlot(p *plot.Plot, w, h vg.Length, path string) error {
	return SavePanels([]*plot.Plot{p}, w, h, path)
}

// SavePanels writes plots stacked top to bottom, their data areas aligned
// (panels sharing a time axis), as SavePlot writes one.
func SavePanels(ps []*plot.Plot, w, h vg.Length, path string) error {
	if len(ps) == 0 {
		return fmt.Errorf("save plot %s: no plot", path)
	}
	var c vg.CanvasSizer
	var write func(f *os.File) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
		c = img
		write = func(f *os.File) error { _, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f); return err }
	case ".svg":
		svg := vgsvg.New(w, h)
		c = svg
		write = func(f *os.File) error { _, err := svg.WriteTo(f); return err }
	default:
		return fmt.Errorf("save plot %s: want .png or .svg", path)
	}
	drawFigure(draw.New(c), ps)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("save plot %s: %w", path, err)
	}
	return f.Close()
}
