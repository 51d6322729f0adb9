package stats

import (
	"fmt"
	"math"
)

// TimeUnit picks a display unit for values of magnitude up to maxAbs ns:
// ns, µs, ms or s, and the divisor that converts ns to it.
func TimeUnit(maxAbs float64) (name string, div float64) {
	switch a := math.Abs(maxAbs); {
	case a < 1e3:
		return "ns", 1
	case a < 1e6:
		return "µs", 1e3
	case a < 1e9:
		return "ms", 1e6
	}
	return "s", 1e9
}

// FormatNS formats a time in ns with a unit (ns, µs, ms, s) and 4
// significant digits, for labels and tables.
func FormatNS(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	unit, div := TimeUnit(v)
	return fmt.Sprintf("%.4g %s", v/div, unit)
}
