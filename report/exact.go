package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/monagent/monagent/stats"
)

// NS is a location statistic in ns, Base + Rel. Base is 0 for a series near
// zero; for a series far from zero (some |x| beyond 2^40 ns, e.g. a clock
// against MONOTONIC_RAW at ~1.8e18 ns) it is the series' first value (for
// the statistics of |x|, its magnitude), and Rel, the statistic relative to
// it, is small enough for float64 to keep fractions of a nanosecond, which
// float64(Base) + Rel would not.
//
// Its JSON is Rel as a float64 when Base is 0, else Base + Rel rounded to
// the nanosecond as an integer with every digit exact (Result.Relative
// keeps the fractions).
type NS struct {
	Base int64
	Rel  float64
}

// Float64 is the value rounded to float64 (for plots and comparisons near
// zero; it loses nanoseconds beyond 2^53).
func (v NS) Float64() float64 { return float64(v.Base) + v.Rel }

// nsFromU returns base + rel for a base up to 2^63 (|math.MinInt64|), which
// int64 cannot hold: MaxInt64 + (rel + the rest).
func nsFromU(base uint64, rel float64) NS {
	if base > math.MaxInt64 {
		return NS{math.MaxInt64, rel + float64(base-math.MaxInt64)}
	}
	return NS{int64(base), rel}
}

// Int is the value rounded to the nearest integer (halves away from zero),
// exact for any Base and |Rel| below 2^63.
func (v NS) Int() *big.Int {
	r := math.Round(v.Rel)
	i := new(big.Int).SetInt64(v.Base)
	if math.Abs(r) < 1<<63 {
		return i.Add(i, new(big.Int).SetInt64(int64(r)))
	}
	f, _ := new(big.Float).SetFloat64(r).Int(nil)
	return i.Add(i, f)
}

// MarshalJSON writes Rel as encoding/json writes a float64 when Base is 0,
// else the value rounded to an exact integer.
func (v NS) MarshalJSON() ([]byte, error) {
	if v.Base == 0 {
		return json.Marshal(v.Rel)
	}
	if math.IsNaN(v.Rel) || math.IsInf(v.Rel, 0) {
		return nil, fmt.Errorf("report: %d + %v ns is not a number", v.Base, v.Rel)
	}
	return v.Int().Append(nil, 10), nil
}

// UnmarshalJSON reads a JSON number: one of an int64 and a fraction, with
// 16 to 19 integer digits (as MarshalJSON writes a far series' values),
// exactly as its integer part (Base) and fraction (Rel); any other as a
// float64 (Base 0). null leaves v as it is.
func (v *NS) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if !json.Valid(b) || !isJSONNumber(s) {
		return fmt.Errorf("report: ns value %.40q is not a JSON number", s)
	}
	ip, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if !strings.ContainsAny(s, "eE") && len(ip) > 15 {
		if i, err := strconv.ParseInt(strings.TrimSuffix(s, "."+frac), 10, 64); err == nil {
			f := 0.0
			if frac != "" {
				f, _ = strconv.ParseFloat("0."+frac, 64)
			}
			if s[0] == '-' {
				f = -f
			}
			*v = NS{i, f}
			return nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("report: ns value %.40q: %w", s, err)
	}
	*v = NS{Rel: f}
	return nil
}

// isJSONNumber reports whether s, valid JSON, is a number (not a string,
// object, array, boolean or null).
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

// Relative holds a far series' location statistics relative to
// Result.BaseNS, those of |x| relative to its magnitude: numbers small
// enough for a JSON reader of float64 (JavaScript) to keep every
// nanosecond and its fractions.
type Relative struct {
	MeanNS   float64 `json:"mean_ns"`
	RMSNS    float64 `json:"rms_ns"`
	MinNS    int64   `json:"min_ns"`
	MaxNS    int64   `json:"max_ns"`
	P50NS    float64 `json:"p50_ns"`
	P75NS    float64 `json:"p75_ns"`
	P95NS    float64 `json:"p95_ns"`
	P99NS    float64 `json:"p99_ns"`
	P999NS   float64 `json:"p999_ns"`
	AbsP75NS float64 `json:"abs_p75_ns"`
	AbsP95NS float64 `json:"abs_p95_ns"`
	AbsP99NS float64 `json:"abs_p99_ns"`
	MaxAbsNS int64   `json:"max_abs_ns"`
}

// absU is |x| (uint64: |math.MinInt64| does not fit int64).
func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-(x + 1)) + 1
	}
	return uint64(x)
}

// absShifted returns |x| - |base| for each x, exact for a base other than 0
// (both magnitudes lie in [1, 2^63]).
func absShifted(x []int64, base int64) []int64 {
	b := absU(base)
	out := make([]int64, len(x))
	for i, v := range x {
		out[i] = int64(absU(v) - b) // two's complement
	}
	return out
}

// cellNS formats a statistic for the tables: for a series near zero (base
// 0) with stats.FormatNS, for one far from zero as "b+23.42 ns", relative
// to the series' first value b, or "|b|+23.42 ns" for a statistic of |x|
// when b < 0.
func cellNS(v NS, base int64) string {
	if base == 0 {
		return stats.FormatNS(v.Float64())
	}
	b := "b"
	if v.Base != base {
		b = "|b|"
	}
	rel := stats.FormatNS(v.Rel)
	if !strings.HasPrefix(rel, "-") {
		rel = "+" + rel
	}
	return b + rel
}
