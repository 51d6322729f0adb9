package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/monagent/monagent/stats"
)

// Options configure Compute.
type Options struct {
	// Bounds (ns) for the shares of |x| <= bound; nil: DefaultBounds.
	Bounds []int64
	// Tau0 is the sampling interval (ns) for the stability measures; 0:
	// the median interval of the series.
	Tau0 int64
}

// DefaultBounds are 100 ns, 1 µs, 10 µs, 100 µs and 1 ms.
var DefaultBounds = []int64{100, 1_000, 10_000, 100_000, 1_000_000}

// Point is one point of a stability curve: the deviation at τ, how many
// terms the estimator averaged and, for ADEV, MDEV and TDEV, the interval.
type Point struct {
	TauS  float64 `json:"tau_s"`
	Value float64 `json:"value"`
	// N is the number of terms of the estimator's sum (overlapping: one
	// per start sample; MTIE: its windows); NonOverlapping, K, how many of
	// them are m apart (m = τ/τ0), the terms of the non-overlapping
	// estimator, consecutive τ-averages: ceil(N/m).
	N              int `json:"n"`
	NonOverlapping int `json:"n_nonoverlapping"`
	// CI is the 68 % (±1σ) interval [low, high] of ADEV, MDEV and TDEV:
	// value · (1 ∓ 1/√K), the simple interval of NIST SP 1065 §5.3.1 with
	// the non-overlapping terms K as its N. It ignores the noise type; low
	// is 0 where K is 1 (the point bounds nothing below). MTIE, a maximum,
	// has none.
	CI []float64 `json:"ci,omitempty"`
}

// devPoint is the Point of d, with its interval when ci.
func devPoint(d stats.Deviation, ci bool) Point {
	p := Point{TauS: d.TauSeconds(), Value: d.Value, N: d.N, NonOverlapping: (d.N + d.M - 1) / max(d.M, 1)}
	if ci && p.NonOverlapping > 0 {
		h := d.Value / math.Sqrt(float64(p.NonOverlapping))
		p.CI = []float64{max(d.Value-h, 0), d.Value + h}
	}
	return p
}

// RelCI is the half width of p's interval relative to its value (1/√K),
// 0 when it has none.
func (p Point) RelCI() float64 {
	if len(p.CI) != 2 || p.Value == 0 {
		return 0
	}
	return (p.CI[1] - p.Value) / p.Value
}

// ShareOut is the fraction and the count of samples with |x| <= BoundNS.
type ShareOut struct {
	BoundNS  int64   `json:"bound_ns"`
	Fraction float64 `json:"fraction"`
	Count    int64   `json:"count"`
}

// Result is the report of one series; its JSON is the documented output.
// The location statistics (NS) of a series far from zero are exact: relative
// to its first value, BaseNS (see NS).
type Result struct {
	Series   map[string]string `json:"series"`
	N        int64             `json:"n"`
	MeanNS   NS                `json:"mean_ns"`
	StdNS    float64           `json:"std_ns"`
	RMSNS    NS                `json:"rms_ns"`
	MaxAbsNS uint64            `json:"max_abs_ns"`
	P50NS    NS                `json:"p50_ns"`
	P75NS    NS                `json:"p75_ns"`
	P95NS    NS                `json:"p95_ns"`
	P99NS    NS                `json:"p99_ns"`
	P999NS   NS                `json:"p999_ns"`
	// DriftPPM is null when the series has fewer than 3 samples.
	DriftPPM   *float64  `json:"drift_ppm"`
	DriftPPMCI []float64 `json:"drift_ppm_ci,omitempty"` // 95 %: [low, high]
	ADev       []Point   `json:"adev"`
	MDev       []Point   `json:"mdev"`
	TDev       []Point   `json:"tdev"`
	MTIE       []Point   `json:"mtie"`

	// Additions: percentiles of |x| (the study's bounds), shares, the
	// stability analysis' interval and segment, what was set aside.
	AbsP75NS NS    `json:"abs_p75_ns"`
	AbsP95NS NS    `json:"abs_p95_ns"`
	AbsP99NS NS    `json:"abs_p99_ns"`
	MinNS    int64 `json:"min_ns"`
	MaxNS    int64 `json:"max_ns"`
	// For a series far from zero (some |x| beyond 2^40 ns): BaseNS, its
	// first value, also as a decimal string for readers whose numbers are
	// float64 (JavaScript), and the location statistics relative to it, the
	// mean and percentiles with their fractions. The fields above are then
	// rounded to the nanosecond, exact integers.
	BaseNS    *int64    `json:"base_ns,omitempty"`
	BaseNSStr string    `json:"base_ns_str,omitempty"`
	Relative  *Relative `json:"relative,omitempty"`

	Shares    []ShareOut `json:"shares"`
	Tau0NS    int64      `json:"tau0_ns"`
	SegmentN  int        `json:"segment_n"`
	Segments  int        `json:"segments"`
	Exact     bool       `json:"exact_percentiles"`
	NonFinite int64      `json:"skipped_nonfinite"`
	Dups      int64      `json:"skipped_duplicates"`
	SameTime  int64      `json:"skipped_same_time"`
	Unsorted  int64      `json:"unsorted"`
	Notes     []string   `json:"notes,omitempty"`
	// Match describes the pairing of a cross-board series (RunMatch).
	Match *MatchInfo `json:"match,omitempty"`
	// Correlation is the series' frequency against a sensor (--correlate).
	Correlation *Correlation `json:"correlation,omitempty"`

	name    string
	drift   *stats.Drift
	segment stats.Segment
	tdevRaw []stats.Deviation
}

// Name is the series' name (its tags, "k=v,...").
func (r *Result) Name() string { return r.name }

// Compute computes the report of one series.
func Compute(s *Series, o Options) (*Result, error) {
	bounds := o.Bounds
	if bounds == nil {
		bounds = DefaultBounds
	}
	sum, err := stats.Summarize(s.X, stats.Config{Bounds: bounds})
	if err != nil {
		return nil, fmt.Errorf("series {%s}: %w", s.Name(), err)
	}
	shift, xs := shifted(s.X)
	r := &Result{Series: map[string]string{}, name: s.Name(), N: sum.N, MeanNS: NS{Rel: sum.Mean}, StdNS: sum.Std,
		RMSNS: NS{Rel: sum.RMS}, MaxAbsNS: sum.MaxAbs, MinNS: sum.Min, MaxNS: sum.Max, Exact: sum.Exact, NonFinite: s.NonFinite,
		Dups: s.Duplicates, SameTime: s.SameTime, Unsorted: s.Unsorted, ADev: []Point{}, MDev: []Point{}, TDev: []Point{}, MTIE: []Point{}, Shares: []ShareOut{}}
	pct, abs := sum.Percentiles, sum.AbsPercentiles
	if shift != 0 {
		if pct, abs, err = r.far(s.X, shift, xs); err != nil {
			return nil, fmt.Errorf("series {%s}: %w", s.Name(), err)
		}
	}
	for _, t := range s.Tags {
		r.Series[t.Key] = t.Value
	}
	at := map[float64]*NS{0.5: &r.P50NS, 0.75: &r.P75NS, 0.95: &r.P95NS, 0.99: &r.P99NS, 0.999: &r.P999NS}
	for _, q := range pct {
		if dst := at[q.P]; dst != nil {
			*dst = NS{shift, q.Value}
		}
	}
	at = map[float64]*NS{0.75: &r.AbsP75NS, 0.95: &r.AbsP95NS, 0.99: &r.AbsP99NS}
	for _, q := range abs {
		if dst := at[q.P]; dst != nil {
			*dst = nsFromU(absU(shift), q.Value)
		}
	}
	if r.Relative != nil {
		r.Relative.P50NS, r.Relative.P75NS, r.Relative.P95NS, r.Relative.P99NS, r.Relative.P999NS = r.P50NS.Rel, r.P75NS.Rel, r.P95NS.Rel, r.P99NS.Rel, r.P999NS.Rel
		r.Relative.AbsP75NS, r.Relative.AbsP95NS, r.Relative.AbsP99NS = r.AbsP75NS.Rel, r.AbsP95NS.Rel, r.AbsP99NS.Rel
	}
	if maxAbs(xs) >= 1<<53 {
		r.note("the values lie more than 2^53 ns (104 days) from the first: the location statistics are float64, good to 16 significant digits")
	}
	for _, sh := range sum.Shares {
		r.Shares = append(r.Shares, ShareOut{sh.Bound, sh.Fraction, sh.Count})
	}
	if sum.N == 1 {
		r.note("a single sample: no standard deviation, drift or stability")
	}
	if s.NonFinite > 0 {
		r.note(fmt.Sprintf("%d NaN or infinite values skipped", s.NonFinite))
	}
	if s.Duplicates > 0 {
		r.note(fmt.Sprintf("%d %s of a point written again (same tags and time) dropped: the last kept, as InfluxDB keeps it", s.Duplicates, plural(s.Duplicates, "record", "records")))
	}
	if s.SameTime > 0 {
		r.note(fmt.Sprintf("%d %s at the time of another tag set's record dropped (the series groups several tag sets; the first in key order kept): --group-by more tags", s.SameTime, plural(s.SameTime, "record", "records")))
	}
	if sum.N >= 3 {
		d, err := stats.FitDrift(s.T, xs)
		if err != nil {
			return nil, fmt.Errorf("series {%s}: drift: %w", s.Name(), err)
		}
		r.drift = &d // of x - shift: float64 cannot hold shift + a few ns
		r.DriftPPM = &d.SlopePPM
		r.DriftPPMCI = []float64{d.SlopeLowPPM, d.SlopeHighPPM}
	} else if sum.N == 2 {
		r.note("2 samples: too few for a drift fit with a confidence interval")
	}
	if len(s.T) < 2 {
		return r, nil
	}
	tau0 := o.Tau0
	if tau0 <= 0 {
		tau0 = roundSignificant(medianInterval(s.T), 3)
	}
	r.Tau0NS = tau0
	segs, err := stats.SplitRegular(s.T, tau0)
	if err != nil {
		return nil, fmt.Errorf("series {%s}: %w", s.Name(), err)
	}
	best := stats.Segment{}
	for _, g := range segs {
		if g.End-g.Start > best.End-best.Start {
			best = g
		}
	}
	r.segment, r.Segments, r.SegmentN = best, len(segs), best.End-best.Start
	if len(segs) > 1 {
		r.note(fmt.Sprintf("%d regular segments at τ0 %s; stability from the longest, %d samples", len(segs), FormatTau(float64(tau0)/1e9), r.SegmentN))
	}
	x := xs[best.Start:best.End]
	for _, m := range []struct {
		name string
		f    func([]int64, int64, []int) ([]stats.Deviation, error)
		dst  *[]Point
	}{{"adev", stats.ADev[int64], &r.ADev}, {"mdev", stats.MDev[int64], &r.MDev}, {"tdev", stats.TDev[int64], &r.TDev}, {"mtie", stats.MTIE[int64], &r.MTIE}} {
		devs, err := m.f(x, tau0, nil)
		if errors.Is(err, stats.ErrTooShort) {
			r.note(fmt.Sprintf("%s: the longest regular segment (%d samples) is too short", m.name, len(x)))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("series {%s}: %s: %w", s.Name(), m.name, err)
		}
		if m.name == "tdev" {
			r.tdevRaw = devs
		}
		for _, d := range devs {
			*m.dst = append(*m.dst, devPoint(d, m.name != "mtie"))
		}
	}
	if constantStability(r) {
		r.note("the offsets of the longest regular segment never change: ADEV, MDEV, TDEV and MTIE are 0 at every τ, so there is no ADEV or TDEV plot (a log axis cannot draw 0)")
	}
	return r, nil
}

// far sets the statistics of a series far from zero from xs = x - shift
// (float64 would lose the differences of values near 1.8e18 ns): the mean,
// spread and RMS, the relative values, and returns the percentiles of xs
// and of |x| - |shift|.
func (r *Result) far(x []int64, shift int64, xs []int64) (pct, abs []stats.Quantile, err error) {
	ssum, err := stats.Summarize(xs, stats.Config{})
	if err != nil {
		return nil, nil, err
	}
	asum, err := stats.Summarize(absShifted(x, shift), stats.Config{})
	if err != nil {
		return nil, nil, err
	}
	// RMS = sqrt(mean² + population variance) = |mean| + var/(|mean| + RMS),
	// and |mean| - |shift| is ±(mean - shift) while they share a sign.
	mean, vr := float64(shift)+ssum.Mean, ssum.Std*ssum.Std*float64(r.N-1)/float64(r.N)
	sign := 1.0
	if shift < 0 {
		sign = -1
	}
	rms := sign*ssum.Mean + vr/(math.Abs(mean)+math.Sqrt(mean*mean+vr))
	r.BaseNS, r.BaseNSStr = &shift, strconv.FormatInt(shift, 10)
	r.StdNS, r.MeanNS, r.RMSNS = ssum.Std, NS{shift, ssum.Mean}, nsFromU(absU(shift), rms)
	r.Relative = &Relative{MeanNS: ssum.Mean, RMSNS: rms, MinNS: ssum.Min, MaxNS: ssum.Max, MaxAbsNS: int64(r.MaxAbsNS - absU(shift))}
	return ssum.Percentiles, asum.Percentiles, nil
}

// maxAbs is the largest |x|.
func maxAbs(x []int64) uint64 {
	var m uint64
	for _, v := range x {
		m = max(m, absU(v))
	}
	return m
}

// base is BaseNS, 0 for a series near zero.
func (r *Result) base() int64 {
	if r.BaseNS == nil {
		return 0
	}
	return *r.BaseNS
}

func (r *Result) note(s string) { r.Notes = append(r.Notes, s) }

// ADevAt returns the ADEV at tau = 1 s, or at the smallest tau when there is
// no 1 s point, and that tau; ok is false when there is no ADEV.
func (r *Result) ADevAt() (tau, v float64, ok bool) {
	p, ok := r.adevPoint()
	return p.TauS, p.Value, ok
}

// adevPoint is the ADEV point ADevAt returns.
func (r *Result) adevPoint() (Point, bool) {
	if len(r.ADev) == 0 {
		return Point{}, false
	}
	for _, p := range r.ADev {
		if math.Abs(p.TauS-1) < 1e-9 {
			return p, true
		}
	}
	return r.ADev[0], true
}

// medianInterval is the median of the positive intervals of sorted t (at
// least 1 ns).
func medianInterval(t []int64) int64 {
	d := make([]int64, 0, len(t)-1)
	for i := 1; i < len(t); i++ {
		d = append(d, t[i]-t[i-1])
	}
	slices.Sort(d)
	return max(d[len(d)/2], 1)
}

// shifted returns x - x[0] and x[0] when some |x| exceeds 2^40 ns (where
// float64 keeps less than 1/4096 ns), else 0 and x itself. It keeps x when a
// difference would overflow int64.
func shifted(x []int64) (int64, []int64) {
	const far = 1 << 40
	need := false
	for _, v := range x {
		if v > far || v < -far {
			need = true
			break
		}
	}
	if !need {
		return 0, x
	}
	out := make([]int64, len(x))
	for i, v := range x {
		d := v - x[0]
		if (d > v) != (x[0] < 0) { // overflow
			return 0, x
		}
		out[i] = d
	}
	return x[0], out
}

// roundSignificant rounds v to n significant decimal digits (an estimated
// sampling interval of 1.000336 s becomes 1 s).
func roundSignificant(v int64, n int) int64 {
	p := int64(1)
	for v/p >= pow10(n) {
		p *= 10
	}
	return max((v+p/2)/p*p, 1)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
