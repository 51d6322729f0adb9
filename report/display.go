package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/monagent/monagent/stats"
)

// How the report prints τ, drift and the deviations: one format for each,
// in every table, note and plot, and never in exponent notation in text
// (JSON keeps the numbers).

// FormatTau formats an averaging time τ in seconds: below 1 s in ms, µs or
// ns (100 ms), from 1 s in s with up to 4 significant digits (1 s, 1.5 s,
// 512 s, 1000 s), and from 10 000 s in whole seconds grouped by thousands
// (10 000 s, 16 384 s), as ISO 80000 groups digits; never 1e4 s.
func FormatTau(s float64) string {
	switch a := math.Abs(s); {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return strconv.FormatFloat(s, 'g', -1, 64) + " s"
	case a == 0:
		return "0 s"
	case a < 0.99995: // not 1000 ms
		return stats.FormatNS(s * 1e9)
	case a < 9999.5: // 4 significant digits stay below 10 000
		return fixedSig(s, 4) + " s"
	default:
		return groupThousands(strconv.FormatFloat(math.Round(s), 'f', 0, 64)) + " s"
	}
}

// groupThousands puts a space between each group of three digits of an
// integer's decimal digits ("-16384": "-16 384").
func groupThousands(d string) string {
	sign := ""
	if strings.HasPrefix(d, "-") {
		sign, d = "-", d[1:]
	}
	var b strings.Builder
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// fixedSig formats v with sig significant digits in positional notation,
// trailing zeros dropped (-1.416e-4 with 4: "-0.0001416").
func fixedSig(v float64, sig int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	// Round to sig digits first: the exponent of the rounded value decides
	// the decimals (9.9996 with 4 digits is 10.00, 2 decimals, not 3).
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', sig-1, 64), 64)
	dec := max(0, sig-1-int(math.Floor(math.Log10(math.Abs(r)))))
	s := strconv.FormatFloat(r, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// driftUnits are FormatDrift's units: the first whose size the larger of
// the drift and its half interval reaches, else the last; ppb for 0.
var driftUnits = []struct {
	name string
	ppm  float64 // the unit in ppm
}{{"ppm", 1}, {"ppb", 1e-3}, {"ppt", 1e-6}}

// FormatDrift formats a drift (a fractional frequency offset, in ppm) and
// the half width of its interval, both in one unit chosen by the larger:
// ppm from 1 ppm, ppb from 1 ppb, else ppt; the drift with 4 significant
// digits, the half interval with 2, positional ("-0.1416 ±3.2 ppt", not
// "-1.416e-07 ppm"). A negative half (none) leaves the interval out.
func FormatDrift(ppm, half float64) string {
	a := max(math.Abs(ppm), half)
	u := driftUnits[len(driftUnits)-1]
	if a == 0 || math.IsNaN(a) {
		u = driftUnits[1] // 0 ±0 ppb
	}
	for _, c := range driftUnits {
		if a >= c.ppm {
			u = c
			break
		}
	}
	s := fixedSig(ppm/u.ppm, 4)
	if half >= 0 {
		s += " ±" + fixedSig(half/u.ppm, 2)
	}
	return s + " " + u.name
}

// FormatDev formats a deviation (ADEV, MDEV: dimensionless) with 3
// significant digits, a short exponent where needed (1.75e-8).
func FormatDev(v float64) string {
	s := strconv.FormatFloat(v, 'g', 3, 64)
	m, e, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	sign := e[:1]
	if sign == "+" {
		sign = ""
	}
	return m + "e" + sign + strings.TrimLeft(e[1:], "0")
}
