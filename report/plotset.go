package report

import (
	"errors"
	"path/filepath"

	"github.com/monagent/monagent/stats"
)

// PlotSet is what WritePlotSet drew for one series, and what it left out.
type PlotSet struct {
	Images  []PlotImage
	Missing []PlotMissing
}

// PlotImage is one plot, as a PNG and an SVG file (names relative to the
// directory written).
type PlotImage struct {
	Kind, Caption string
	PNG, SVG      string
}

// PlotMissing is a plot left out, and why.
type PlotMissing struct {
	Kind, Caption, Reason string
}

// Paths are the files of the set, under dir.
func (s PlotSet) Paths(dir string) []string {
	var out []string
	for _, im := range s.Images {
		out = append(out, filepath.Join(dir, im.PNG), filepath.Join(dir, im.SVG))
	}
	return out
}

// plotCaptions describe each kind of plot.
var plotCaptions = map[string]string{
	"hist":       "histogram of the offsets with the fitted normal",
	"cdf":        "CDF of |offset| with the 75, 95 and 99 % marks",
	"offset":     "offset against time with the drift line",
	"adev":       "ADEV and MDEV against τ",
	"tdev":       "TDEV and MTIE against τ",
	"freqsensor": "frequency offset against the sensor, with the fitted coefficient",
	"freqtime":   "frequency offset and the sensor against time",
}

// missingReason says why a plot of r could not be drawn.
func missingReason(kind string, r *Result, err error) string {
	stability := kind == "adev" || kind == "tdev"
	switch {
	case stability && constantStability(r):
		return "the series is constant (every offset of its longest regular segment is the same): each deviation is 0, which a log axis cannot draw"
	case stability && errors.Is(err, stats.ErrTooShort):
		return "the series is too short for a stability measure (see the notes)"
	}
	return err.Error()
}

// constantStability reports whether r has ADEV, TDEV and MTIE points and
// every one is 0: the offsets analysed never moved.
func constantStability(r *Result) bool {
	if len(r.ADev) == 0 && len(r.MTIE) == 0 {
		return false
	}
	for _, ps := range [][]Point{r.ADev, r.MDev, r.TDev, r.MTIE} {
		for _, p := range ps {
			if p.Value != 0 {
				return false
			}
		}
	}
	return true
}
