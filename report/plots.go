//go:build !arm

package report

// Plots are left out of 32-bit ARM builds (plots_arm.go): gonum's plotting
// and its fonts add 6.6 MB to the board's binary, and a board ships its data
// to be reported on elsewhere.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/monagent/monagent/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// PlotsBuilt reports whether this build draws plots.
const PlotsBuilt = true

// WritePlots writes, for the series s and its result r, PNG and SVG files
// into dir: NAME-hist (histogram with the normal fit), NAME-cdf (CDF of |x|
// with the 75/95/99 % marks, each its own look), NAME-offset (offset
// against time with the drift line), NAME-adev (ADEV and MDEV) and
// NAME-tdev (TDEV and MTIE), the deviations with their 68 % intervals,
// where NAME is prefix plus the series' tags, and with a correlation
// (r.Correlation) NAME-freqsensor and NAME-freqtime (plots_correlate.go).
// It returns the files written; a plot the series is too short for is left
// out (WritePlotSet says why).
func WritePlots(dir, prefix string, s *Series, r *Result) ([]string, error) {
	set, err := WritePlotSet(dir, prefix, s, r)
	return set.Paths(dir), err
}

// WritePlotSet is WritePlots, returning the plots drawn and, for each left
// out, the reason.
func WritePlotSet(dir, prefix string, s *Series, r *Result) (PlotSet, error) {
	var set PlotSet
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return set, fmt.Errorf("plots: %w", err)
	}
	name := unsafeName.ReplaceAllString(strings.Trim(prefix+"_"+r.Name(), "_"), "_")
	title := prefix
	if r.Name() != "" {
		title += " {" + r.Name() + "}"
	}
	save := func(kind, caption string, panels []plotT) error {
		img := PlotImage{Kind: kind, Caption: caption, PNG: name + "-" + kind + ".png", SVG: name + "-" + kind + ".svg"}
		for _, f := range []string{img.PNG, img.SVG} {
			h := stats.PlotHeight * vg.Length(1+len(panels)) / 2 // two panels: 1.5 times as high
			if err := stats.SavePanels(panels, stats.PlotWidth, h, filepath.Join(dir, f)); err != nil {
				return err
			}
		}
		set.Images = append(set.Images, img)
		return nil
	}
	emit := func(kind string, mk func() (plotT, error)) error {
		p, err := mk()
		if err != nil {
			set.Missing = append(set.Missing, PlotMissing{Kind: kind, Caption: plotCaptions[kind], Reason: missingReason(kind, r, err)})
			return nil
		}
		return save(kind, plotCaptions[kind], []plotT{p})
	}
	// Offsets far from zero are drawn relative to the first one, as
	// Compute computes their spread.
	shift, xs := shifted(s.X)
	label, absLabel := "offset", "|offset|"
	if shift != 0 { // the unit follows: "offset − b (ns), b = …"
		label = "offset − b"
		absLabel = label
		title += fmt.Sprintf(", b = %d ns", shift)
	}
	acc, err := stats.NewAccumulator(stats.Config{})
	if err != nil {
		return set, err
	}
	acc.AddSlice(xs)
	drift := r.drift // fitted to xs
	err = firstErr(
		emit("hist", func() (plotT, error) {
			bins := min(max(int(r.N)/20, 10), 100)
			h, err := acc.Histogram(bins)
			if err != nil {
				return nil, err
			}
			return stats.PlotHistogram(h, label, "offset histogram\n"+title)
		}),
		emit("cdf", func() (plotT, error) {
			marks := []stats.Quantile{{P: 0.75, Value: r.AbsP75NS.Float64()}, {P: 0.95, Value: r.AbsP95NS.Float64()}, {P: 0.99, Value: r.AbsP99NS.Float64()}}
			cdfOf := acc
			if shift == 0 { // the study's CDF of |offset|
				abs := make([]int64, len(s.X))
				for i, v := range s.X {
					if v < 0 {
						v = -max(v, -math.MaxInt64)
					}
					abs[i] = v
				}
				cdfOf, _ = stats.NewAccumulator(stats.Config{})
				cdfOf.AddSlice(abs)
			} else {
				for i := range marks {
					v, err := acc.Quantile(marks[i].P)
					if err != nil {
						return nil, err
					}
					marks[i].Value = v
				}
			}
			pts, err := cdfOf.CDF(2000)
			if err != nil {
				return nil, err
			}
			return cdfPlot(pts, marks, absLabel, "CDF of "+absLabel+"\n"+title)
		}),
		emit("offset", func() (plotT, error) {
			return offsetPlot(s.T, xs, drift, label, "offset vs time\n"+title)
		}),
		emit("adev", func() (plotT, error) {
			return stabilityPlot([]devCurve{{"ADEV (overlapping)", r.ADev}, {"MDEV", r.MDev}},
				"deviation (dimensionless)", "ADEV / MDEV\n"+title, false)
		}),
		emit("tdev", func() (plotT, error) {
			return stabilityPlot([]devCurve{{"TDEV", r.TDev}, {"MTIE", r.MTIE}}, "TDEV, MTIE", "TDEV / MTIE\n"+title, true)
		}),
	)
	if err == nil && r.Correlation != nil {
		err = correlationPlots(r.Correlation, title, save, func(kind string, e error) {
			set.Missing = append(set.Missing, PlotMissing{Kind: kind, Caption: plotCaptions[kind], Reason: e.Error()})
		})
	}
	return set, err
}

func toDev(ps []Point) []stats.Deviation {
	out := make([]stats.Deviation, len(ps))
	for i, p := range ps {
		out[i] = stats.Deviation{Tau: int64(p.TauS*1e9 + 0.5), Value: p.Value}
	}
	return out
}

type plotT = *plot.Plot
