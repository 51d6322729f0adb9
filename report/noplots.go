package report

import "errors"

// ErrNoPlots is what WritePlots returns in a build without plots (32-bit
// ARM: plots_arm.go).
var ErrNoPlots = errors.New("report: this linux/arm build has no plots (they would add 6.6 MB to the board's binary): run monagent report --plots on an amd64 or arm64 host, against the board's InfluxDB or a copy of its spool")
