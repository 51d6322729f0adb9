package stats

import (
	"fmt"
	"math"
)

// TimeUnit picks a display unit for values of magnitude up to maxAbs ns:
// ns, µs, ms or s, and the divisor that converts ns to it.
func TimeUnit(maxAbs float64) (name string, div float64) {
	return pickUnit(valueUnits[:], math.Abs(maxAbs))
}

// valueUnits are TimeUnit's units.
var valueUnits = [...]unit{{1e3, "ns", 1}, {1e6, "µs", 1e3}, {1e9, "ms", 1e6}, {math.Inf(1), "s", 1e9}}

// unit is a display unit for magnitudes below below (ns) and the divisor
// that converts ns to it.
type unit struct {
	below float64
	name  string
	div   float64
}

// pickUnit is the first of units that a is below; the last serves
// every larger magnitude (and NaN).
func pickUnit(units []unit, a float64) (name string, div float64) {
	last := units[len(units)-1]
	for _, u := range units[:len(units)-1] {
		if a < u.below {
			return u.name, u.div
		}
	}
	return last.name, last.div
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
