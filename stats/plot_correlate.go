//go:build !arm

package stats

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFrequencySensor draws a clock's frequency offsets (ppb, one per
// window) against a sensor's values over the same windows (a temperature
// quantity, e.g. temperature, in unit), and the fitted line l with its
// coefficient: ntpviz's frequency against temperature.
func PlotFrequencySensor(v, ppb []float64, l Line, quantity, unit, title string) (*plot.Plot, error) {
	if len(v) == 0 || len(v) != len(ppb) {
		return nil, errors.New("plot frequency against sensor: no points")
	}
	p := newPlot(title)
	p.X.Label.Text = quantity + " (" + unit + ")"
	p.Y.Label.Text = "frequency offset (ppb)"
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{formatPlain}, linearTicks{formatPlain}
	xy := make(plotter.XYs, len(v))
	for i := range v {
		xy[i] = plotter.XY{X: v[i], Y: ppb[i]}
	}
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, fmt.Errorf("plot frequency against sensor: %w", err)
	}
	s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = colData, vg.Points(2), draw.CircleGlyph{}
	p.Add(s)
	p.Legend.Add(fmt.Sprintf("windows (n = %d)", len(v)), s)
	fit, err := plotter.NewLine(plotter.XYs{{X: l.XMin, Y: l.At(l.XMin)}, {X: l.XMax, Y: l.At(l.XMax)}})
	if err == nil {
		fit.Color, fit.Width = colFit, vg.Points(2)
		p.Add(fit)
		p.Legend.Add(fmt.Sprintf("fit: %.4g ppb/%s [%.4g, %.4g] (95 %%), r = %.3f", l.Slope, unit, l.SlopeLow, l.SlopeHigh, l.R), fit)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// PlotFrequencyTime draws two panels against time since t0 (ns): the
// frequency offsets (ppb) at the middles t of their windows, with fitted,
// the frequency the fitted line predicts from the sensor at ft, and the
// sensor's readings sv at st (quantity in unit): ntpviz's
// local-freq-temps. Lines break at gaps.
func PlotFrequencyTime(t []int64, ppb []float64, ft []int64, fitted []float64, st []int64, sv []float64, t0 int64, quantity, unit, title string) ([]*plot.Plot, error) {
	if len(t) == 0 || len(t) != len(ppb) || len(ft) != len(fitted) || len(st) != len(sv) || len(st) == 0 {
		return nil, errors.New("plot frequency and sensor against time: no points")
	}
	end := max(t[len(t)-1], st[len(st)-1])
	tunit, tdiv := timeAxis(end - t0)
	xlabel := "time since first sample (" + tunit + ")"
	top := newPlot(title)
	top.X.Label.Text, top.Y.Label.Text = xlabel, "frequency offset (ppb)"
	if err := addLines(top, t, ppb, t0, tdiv, colData, "frequency offset per window", true, false); err != nil {
		return nil, err
	}
	if len(ft) > 0 {
		if err := addLines(top, ft, fitted, t0, tdiv, colFit, "frequency the fit predicts from the "+quantity, false, true); err != nil {
			return nil, err
		}
	}
	top.Add(plotter.NewGrid())
	bottom := newPlot("")
	bottom.X.Label.Text, bottom.Y.Label.Text = xlabel, quantity+" ("+unit+")"
	if err := addLines(bottom, st, sv, t0, tdiv, colOther, quantity+" readings", false, false); err != nil {
		return nil, err
	}
	bottom.Add(plotter.NewGrid())
	// One time range for both.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range []*plot.Plot{top, bottom} {
		lo, hi = min(lo, p.X.Min), max(hi, p.X.Max)
	}
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = lo, hi
		p.Y.Tick.Marker = linearTicks{formatPlain}
	}
	return []*plot.Plot{top, bottom}, nil
}

// addLines draws values v at times t (ns, since t0, divided by tdiv) as a
// line broken at gaps, at most maxOffsetPoints points (per-bucket minimum
// and maximum), with one legend entry.
func addLines(p *plot.Plot, t []int64, v []float64, t0 int64, tdiv float64, c color.Color, name string, points, dashed bool) error {
	for i, g := range gapSegments(t) {
		xy := decimateFloat(t[g.Start:g.End], v[g.Start:g.End], t0, tdiv, max(1, maxOffsetPoints/2*(g.End-g.Start)/len(t)))
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		l.Color, s.Color = c, c
		s.GlyphStyle.Radius = vg.Points(1.5)
		if points && len(t) <= 2000 {
			p.Add(l, s)
			if i == 0 {
				p.Legend.Add(name, l, s)
			}
			continue
		}
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		if i == 0 {
			p.Legend.Add(name, l)
		}
	}
	return nil
}

// decimateFloat is decimate for float values at times since t0.
func decimateFloat(t []int64, v []float64, t0 int64, tdiv float64, buckets int) plotter.XYs {
	return envelope(v, func(i int) plotter.XY { return plotter.XY{X: float64(t[i]-t0) / tdiv, Y: v[i]} }, buckets)
}
