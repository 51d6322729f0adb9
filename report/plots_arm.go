//go:build arm

package report

// PlotsBuilt reports whether this build draws plots: 32-bit ARM builds do
// not (gonum's plotting and fonts would add 6.6 MB to the board's binary);
// run `monagent report --plots` on an amd64 or arm64 host, against the
// board's InfluxDB data or a copy of its spool.
const PlotsBuilt = false

// WritePlots fails with ErrNoPlots.
func WritePlots(dir, prefix string, s *Series, r *Result) ([]string, error) {
	return nil, ErrNoPlots
}

// WritePlotSet fails with ErrNoPlots.
func WritePlotSet(dir, prefix string, s *Series, r *Result) (PlotSet, error) {
	return PlotSet{}, ErrNoPlots
}
