package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/monagent/monagent/stats"
)

// CorrelateOptions pair each clock series' frequency offset with one sensor
// series (--correlate): the records of Measurement with Field, filtered by
// Where, must form exactly one series (a temperature).
type CorrelateOptions struct {
	Measurement, Field string
	Where              []Tag
	// Window is the span (ns) over which each frequency is fitted; 0:
	// DefaultWindowSamples sampling intervals of the clock series, at most
	// an eighth of its span.
	Window int64
}

// DefaultWindowSamples is the default frequency window in sampling
// intervals: 64 (a minute at 1 Hz).
const DefaultWindowSamples = 64

// maxInterpolateWindows bounds the sensor gap a window's value may be
// interpolated across, in windows.
const maxInterpolateWindows = 10

// Errors of a correlation that gives no coefficient.
var (
	// ErrNoOverlap: the clock and the sensor series share no time.
	ErrNoOverlap = errors.New("the series do not overlap in time")
	// ErrConstantSensor: the sensor reads one value over every paired
	// window, so no coefficient can be fitted.
	ErrConstantSensor = errors.New("the sensor is constant")
)

// ParseCorrelate parses "measurement.field[,tag=value...]" (the last dot of
// the first part separates the field).
func ParseCorrelate(spec string) (CorrelateOptions, error) {
	parts := strings.Split(spec, ",")
	i := strings.LastIndexByte(parts[0], '.')
	if i <= 0 || i == len(parts[0])-1 {
		return CorrelateOptions{}, fmt.Errorf("--correlate %q: want measurement.field[,tag=value...], e.g. sensor.value,kind=temperature", spec)
	}
	o := CorrelateOptions{Measurement: parts[0][:i], Field: parts[0][i+1:]}
	for _, a := range parts[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return CorrelateOptions{}, fmt.Errorf("--correlate %q: %q: want tag=value", spec, a)
		}
		o.Where = append(o.Where, Tag{k, v})
	}
	return o, nil
}

// String is the sensor's selection as given.
func (o CorrelateOptions) String() string {
	s := o.Measurement + "." + o.Field
	for _, t := range o.Where {
		s += "," + t.Key + "=" + t.Value
	}
	return s
}

// Correlation is a clock's frequency offset against a sensor: the
// coefficient (ppb per sensor unit, e.g. ppb/°C) of the least-squares line
// through the windows' (sensor, frequency) pairs, with its 95 % interval.
// Error says why there is no coefficient (then the numbers are zero).
type Correlation struct {
	Sensor   string `json:"sensor"` // measurement.field{tags}
	Unit     string `json:"unit"`   // of the sensor values, e.g. °C
	WindowNS int64  `json:"window_ns"`
	Windows  int    `json:"windows"` // paired
	// Windows of the clock left out: outside the sensor's time, or with no
	// reading within maxInterpolateWindows windows.
	OutsideSensor  int       `json:"windows_outside_sensor"`
	WithoutReading int       `json:"windows_without_reading"`
	PPBPerUnit     float64   `json:"ppb_per_unit"`
	PPBPerUnitCI   []float64 `json:"ppb_per_unit_ci,omitempty"` // 95 %: [low, high]
	PPBPerUnitSE   float64   `json:"ppb_per_unit_se"`
	R              float64   `json:"r"`
	SensorMean     float64   `json:"sensor_mean"`
	SensorMin      float64   `json:"sensor_min"`
	SensorMax      float64   `json:"sensor_max"`
	FrequencyPPB   float64   `json:"frequency_ppb_at_mean"` // fitted, at SensorMean
	ResidualPPB    float64   `json:"residual_std_ppb"`
	Error          string    `json:"error,omitempty"`
	Notes          []string  `json:"notes,omitempty"`

	line           stats.Line
	freq           []stats.Frequency
	pairs          []pair // parallel to the paired windows
	sensorT        []int64
	sensorV        []float64
	t0             int64 // the clock series' first time
	clockN, sensN  string
	quantity       string // the sensor's kind tag (temperature), else "sensor"
	sensorReadings int
}

type pair struct {
	t      int64 // the window's middle
	ppb, v float64
}

// sensorUnits scales the agent's integer sensor units to readable ones.
var sensorUnits = map[string]struct {
	unit  string
	scale float64
}{"u°C": {"°C", 1e-6}, "µ°C": {"°C", 1e-6}, "m°C": {"°C", 1e-3}, "nV": {"mV", 1e-6}, "nA": {"mA", 1e-6}, "uW": {"mW", 1e-3}, "uJ": {"J", 1e-6}, "m%RH": {"%RH", 1e-3}}

// sensorValues returns the sensor series' values in a readable unit (by
// its unit tag: the agent's µ°C as °C) and that unit.
func sensorValues(s *Series, field string) ([]float64, string) {
	unit, scale := field, 1.0
	for _, t := range s.Tags {
		if t.Key == "unit" {
			unit = t.Value
			if u, ok := sensorUnits[t.Value]; ok {
				unit, scale = u.unit, u.scale
			}
		}
	}
	v := make([]float64, len(s.X))
	for i, x := range s.X {
		if len(s.f) == len(s.X) {
			v[i] = s.f[i] * scale
		} else {
			v[i] = float64(x) * scale
		}
	}
	return v, unit
}

// Correlate pairs the clock series' frequency offset, the least-squares
// slope of its offsets over each window (stats.WindowFrequency), with the
// sensor's value over that window: the mean of its readings within the
// window's samples, or, with none there, the linear interpolation at the
// window's middle between the readings either side when they are at most
// maxInterpolateWindows windows apart. It fits the coefficient with
// stats.FitLine. Series that share no time fail with ErrNoOverlap, a
// sensor constant over the paired windows with ErrConstantSensor, fewer
// than 3 paired windows with stats.ErrTooShort: never a coefficient.
func Correlate(clock, sensor *Series, o CorrelateOptions) (*Correlation, error) {
	c := &Correlation{Sensor: o.Measurement + "." + o.Field, clockN: clock.Name(), sensN: sensor.Name()}
	if sensor.Name() != "" {
		c.Sensor += "{" + sensor.Name() + "}"
	}
	c.sensorV, c.Unit = sensorValues(sensor, o.Field)
	c.quantity = "sensor"
	for _, t := range sensor.Tags {
		if t.Key == "kind" && t.Value != "" {
			c.quantity = t.Value
		}
	}
	c.sensorT, c.sensorReadings = sensor.T, len(sensor.T)
	if len(clock.T) == 0 || len(sensor.T) == 0 {
		return c, fmt.Errorf("correlate: %w", stats.ErrEmpty)
	}
	c.t0 = clock.T[0]
	ct0, ct1, st0, st1 := clock.T[0], clock.T[len(clock.T)-1], sensor.T[0], sensor.T[len(sensor.T)-1]
	if min(ct1, st1) < max(ct0, st0) {
		return c, fmt.Errorf("correlate: the clock's offsets span %s and the sensor's readings %s: %w", span(ct0, ct1), span(st0, st1), ErrNoOverlap)
	}
	w := o.Window
	if w <= 0 {
		if len(clock.T) < 2 {
			return c, fmt.Errorf("correlate: the clock series has 1 sample: %w", stats.ErrTooShort)
		}
		iv := medianInterval(clock.T)
		w = min(DefaultWindowSamples*iv, (ct1-ct0)/8)
		w = max(w, 3*iv)
	}
	c.WindowNS = w
	fs, err := stats.WindowFrequency(clock.T, clock.X, w)
	if err != nil {
		return c, fmt.Errorf("correlate: frequency of the clock over %s windows: %w", time.Duration(w), err)
	}
	c.freq = fs
	var xs, ys []float64
	for _, f := range fs {
		v, ok, outside := sensorAt(sensor.T, c.sensorV, f, w)
		switch {
		case outside:
			c.OutsideSensor++
		case !ok:
			c.WithoutReading++
		default:
			c.pairs = append(c.pairs, pair{f.Mid(), f.PPB, v})
			xs, ys = append(xs, v), append(ys, f.PPB)
		}
	}
	c.Windows = len(c.pairs)
	if c.Windows == 0 && c.OutsideSensor > 0 && c.WithoutReading == 0 {
		return c, fmt.Errorf("correlate: no %s window of the clock's offsets (%s) lies within the sensor's readings (%s): %w", time.Duration(w), span(ct0, ct1), span(st0, st1), ErrNoOverlap)
	}
	if c.Windows < 3 {
		return c, fmt.Errorf("correlate: %d of %d windows of %s pair with a sensor reading (%d outside its readings, %d without one near), want >= 3: %w",
			c.Windows, len(fs), time.Duration(w), c.OutsideSensor, c.WithoutReading, stats.ErrTooShort)
	}
	l, err := stats.FitLine(xs, ys)
	if errors.Is(err, stats.ErrNoSpread) {
		return c, fmt.Errorf("correlate: the sensor reads %.6g %s over all %d windows paired: no coefficient can be fitted: %w", xs[0], c.Unit, c.Windows, ErrConstantSensor)
	}
	if err != nil {
		return c, fmt.Errorf("correlate: %w", err)
	}
	c.line = l
	c.PPBPerUnit, c.PPBPerUnitSE, c.PPBPerUnitCI = l.Slope, l.SlopeSE, []float64{l.SlopeLow, l.SlopeHigh}
	c.R, c.SensorMean, c.SensorMin, c.SensorMax = l.R, l.XMean, l.XMin, l.XMax
	c.FrequencyPPB, c.ResidualPPB = l.Intercept, l.ResidualStd
	if !l.Significant() {
		c.Notes = append(c.Notes, fmt.Sprintf("the coefficient is not distinguishable from 0 at 95 %% (the sensor spans %.4g %s)", l.XMax-l.XMin, c.Unit))
	}
	if skipped := c.OutsideSensor + c.WithoutReading; skipped > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d of %d windows left out: %d outside the sensor's readings, %d without a reading within %d windows", skipped, len(fs), c.OutsideSensor, c.WithoutReading, maxInterpolateWindows))
	}
	return c, nil
}

// sensorAt is the sensor's value over frequency window f: the mean of the
// readings within it, else the interpolation at its middle; outside when
// the middle lies beyond the readings.
func sensorAt(t []int64, v []float64, f stats.Frequency, w int64) (val float64, ok, outside bool) {
	lo := sort.Search(len(t), func(i int) bool { return t[i] >= f.First })
	hi := sort.Search(len(t), func(i int) bool { return t[i] > f.Last })
	if hi > lo {
		var s float64
		for _, x := range v[lo:hi] {
			s += x
		}
		return s / float64(hi-lo), true, false
	}
	mid := f.Mid()
	if lo == 0 || lo == len(t) { // no reading before or after the window
		return 0, false, true
	}
	a, b := lo-1, lo
	if t[b]-t[a] > maxInterpolateWindows*w {
		return 0, false, false
	}
	frac := float64(mid-t[a]) / float64(t[b]-t[a])
	return v[a] + frac*(v[b]-v[a]), true, false
}

// span formats a time range for a message.
func span(a, b int64) string {
	return time.Unix(0, a).UTC().Format(time.RFC3339) + " to " + time.Unix(0, b).UTC().Format(time.RFC3339)
}

// Summary is the correlation in one line.
func (c *Correlation) Summary() string {
	if c.Error != "" {
		return "no coefficient: " + c.Error
	}
	return fmt.Sprintf("%.4g ppb/%s [%.4g, %.4g] (95 %%), r = %.3f, %d windows of %s, %s %.4g..%.4g %s; %.4g ppb at %.4g %s",
		c.PPBPerUnit, c.Unit, c.PPBPerUnitCI[0], c.PPBPerUnitCI[1], c.R, c.Windows, time.Duration(c.WindowNS), c.Sensor,
		c.SensorMin, c.SensorMax, c.Unit, c.FrequencyPPB, c.SensorMean, c.Unit)
}

// correlate reads the sensor series and pairs each clock series with it,
// setting each result's Correlation. It fails when no clock series gives a
// coefficient, with the first reason.
func correlate(ctx context.Context, in Input, q Query, o CorrelateOptions, series []*Series, rs []*Result, errw io.Writer) error {
	sq := Query{Measurement: o.Measurement, Field: o.Field, Where: o.Where, Start: q.Start, Stop: q.Stop, floats: true}
	ss, err := read(ctx, in, sq, errw)
	if err != nil {
		return fmt.Errorf("--correlate %s: %w", o, err)
	}
	if len(ss) > 1 {
		names := make([]string, len(ss))
		for i, s := range ss {
			names[i] = "{" + s.Name() + "}"
		}
		return fmt.Errorf("--correlate %s selects %d series, %s: add tag=value to choose one", o, len(ss), strings.Join(names, ", "))
	}
	var first error
	ok := 0
	for i, s := range series {
		c, err := Correlate(s, ss[0], o)
		if err != nil {
			c.Error = strings.TrimPrefix(err.Error(), "correlate: ")
			if first == nil {
				first = fmt.Errorf("--correlate %s with {%s}: %w", o, s.Name(), err)
			}
		} else {
			ok++
		}
		rs[i].Correlation = c
	}
	if ok == 0 {
		return first
	}
	return nil
}

// writeCorrelations writes each series' correlation line after the table.
func writeCorrelations(w io.Writer, rs []*Result, bullet string) error {
	first := true
	for _, r := range rs {
		c := r.Correlation
		if c == nil {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nfrequency against %s (ppb per %s):\n", c.Sensor, c.Unit)
			first = false
		}
		name := r.Name()
		if name == "" {
			name = "(all)"
		}
		fmt.Fprintf(w, "%s%s: %s\n", bullet, name, c.Summary())
		for _, n := range c.Notes {
			if _, err := fmt.Fprintf(w, "%s%s: %s\n", bullet, name, n); err != nil {
				return err
			}
		}
	}
	return nil
}
