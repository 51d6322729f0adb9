package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/stats"
)

// synthClockAndTemperature is line protocol of a clock whose frequency
// follows a temperature: frequency = 15 ppb + k (T - 40 °C), T = 40 °C +
// 4 °C sin(2π t / 1 h) read every 10 s by an lm75-like sensor in µ°C (with
// 50 m°C of noise), the clock's offset against GNSS every 1 s for hours
// with 10 ns of white phase noise. The sensor starts sensorShift ns after
// the clock; constant pins T to 41.5 °C.
func synthClockAndTemperature(k float64, hours int, sensorShift int64, constant bool) string {
	r := rand.New(rand.NewPCG(7, 8))
	t0 := int64(1_750_000_000_000_000_000)
	temp := func(i int) float64 {
		if constant {
			return 41.5
		}
		return 40 + 4*math.Sin(2*math.Pi*float64(i)/3600)
	}
	var b strings.Builder
	phase := 0.0
	for i := range hours * 3600 {
		phase += 15 + k*(temp(i)-40)
		fmt.Fprintf(&b, "clock_offset,clock=xo,ref=gnss offset_ns=%di %d\n", int64(math.Round(phase+10*r.NormFloat64())), t0+int64(i)*1e9)
		if i%10 == 0 {
			v := temp(i)
			if !constant {
				v += 0.05 * r.NormFloat64()
			}
			fmt.Fprintf(&b, "sensor,device=lm75,kind=temperature,sensor=temp1,source=hwmon,unit=u°C value=%di %d\n", int64(math.Round(v*1e6)), t0+sensorShift+int64(i)*1e9)
		}
	}
	return b.String()
}

var qClock = Query{Measurement: "clock_offset", Field: "offset_ns"}

func correlateLP(t *testing.T, lp string, o CorrelateOptions) (*Correlation, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "in.lp")
	if err := os.WriteFile(f, []byte(lp), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	err := Run(context.Background(), Input{Paths: []string{f}}, qClock, RunOptions{Format: "json", Correlate: &o}, &out, &errw)
	if err != nil {
		return nil, err
	}
	var rs []Result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rs) != 1 || rs[0].Correlation == nil {
		t.Fatalf("results %s", out.String())
	}
	return rs[0].Correlation, nil
}

// TestCorrelateKnownCoefficient: the coefficient of a synthetic clock whose
// frequency follows a synthetic temperature is recovered within 5 %, its
// interval covers it, in °C from the agent's µ°C.
func TestCorrelateKnownCoefficient(t *testing.T) {
	for _, k := range []float64{-28, 3.5} {
		o, _ := ParseCorrelate("sensor.value,kind=temperature")
		c, err := correlateLP(t, synthClockAndTemperature(k, 4, 0, false), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("k = %g: %s", k, c.Summary())
		if math.Abs(c.PPBPerUnit-k) > 0.05*math.Abs(k) || k < c.PPBPerUnitCI[0] || k > c.PPBPerUnitCI[1] {
			t.Errorf("k = %g: coefficient %g %v ppb/%s", k, c.PPBPerUnit, c.PPBPerUnitCI, c.Unit)
		}
		if c.Unit != "°C" || c.WindowNS != 64e9 || c.Windows < 200 || c.SensorMin > 36.5 || c.SensorMax < 43.5 || math.Abs(c.FrequencyPPB-(15+k*(c.SensorMean-40))) > 1 {
			t.Errorf("k = %g: %+v", k, c)
		}
	}
	// A window longer than the sensor's interval, given.
	o := CorrelateOptions{Measurement: "sensor", Field: "value", Window: 300e9}
	c, err := correlateLP(t, synthClockAndTemperature(-28, 4, 0, false), o)
	if err != nil || c.WindowNS != 300e9 || math.Abs(c.PPBPerUnit+28) > 0.05*28 {
		t.Errorf("300 s windows: %+v %v", c, err)
	}
	// Sparse sensor readings (every 10 s) against 5 s windows: the windows
	// without one are interpolated, but the last, after the last reading.
	o.Window = 5e9
	c, err = correlateLP(t, synthClockAndTemperature(-28, 1, 0, false), o)
	if err != nil || c.WithoutReading != 0 || c.Windows != 719 || c.OutsideSensor != 1 || math.Abs(c.PPBPerUnit+28) > 0.05*28 {
		t.Errorf("5 s windows: %+v %v", c, err)
	}
}

// TestCorrelateBadInput: series that do not overlap, a constant temperature,
// too little shared time or several sensors give a clear error, never a
// coefficient.
func TestCorrelateBadInput(t *testing.T) {
	o, _ := ParseCorrelate("sensor.value")
	for _, c := range []struct {
		name string
		lp   string
		o    CorrelateOptions
		is   error
		want string
	}{
		{"a day apart", synthClockAndTemperature(-28, 1, 86400e9, false), o, ErrNoOverlap, "do not overlap in time"},
		{"constant", synthClockAndTemperature(-28, 1, 0, true), o, ErrConstantSensor, "reads 41.5 °C over all"},
		{"10 s shared", synthClockAndTemperature(-28, 1, 3590e9, false), o, ErrNoOverlap, "no 1m4s window of the clock's offsets"},
		{"100 s shared", synthClockAndTemperature(-28, 1, 3500e9, false), o, stats.ErrTooShort, "2 of 56 windows of 1m4s pair with a sensor reading"},
		{"no sensor", synthClockAndTemperature(-28, 1, 0, false), CorrelateOptions{Measurement: "sensor", Field: "nope"}, ErrNoData, "--correlate sensor.nope"},
	} {
		got, err := correlateLP(t, c.lp, c.o)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (%+v), want %v and %q", c.name, err, got, c.is, c.want)
		}
	}
	two := synthClockAndTemperature(-28, 1, 0, false) + "sensor,device=other,unit=u°C value=1i 1750000000000000000\n"
	if _, err := correlateLP(t, two, o); err == nil || !strings.Contains(err.Error(), "selects 2 series") {
		t.Errorf("two sensors: %v", err)
	}
	for _, spec := range []string{"sensor", "sensor.", ".value", "sensor.value,kind"} {
		if _, err := ParseCorrelate(spec); err == nil {
			t.Errorf("ParseCorrelate(%q) accepted", spec)
		}
	}
	if o, err := ParseCorrelate("a.b.value,kind=temperature,device=lm75"); err != nil || o.Measurement != "a.b" || o.Field != "value" || len(o.Where) != 2 || o.String() != "a.b.value,kind=temperature,device=lm75" {
		t.Errorf("ParseCorrelate: %+v %v", o, err)
	}
}

// TestCorrelateText: the text report prints the coefficient after the table,
// and the plots of the correlation are drawn.
func TestCorrelateText(t *testing.T) {
	f := filepath.Join(t.TempDir(), "in.lp")
	os.WriteFile(f, []byte(synthClockAndTemperature(-28, 2, 0, false)), 0o644)
	o, _ := ParseCorrelate("sensor.value,kind=temperature")
	var out, errw bytes.Buffer
	dir := t.TempDir()
	ro := RunOptions{Correlate: &o, PlotDir: dir}
	if !PlotsBuilt {
		ro.PlotDir = "" // 32-bit ARM: --plots says it has none
	}
	if err := Run(context.Background(), Input{Paths: []string{f}}, qClock, ro, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "frequency against sensor.value{device=lm75,kind=temperature,sensor=temp1,source=hwmon,unit=u°C} (ppb per °C):\nclock=xo,ref=gnss: -2") {
		t.Errorf("text:\n%s", out.String())
	}
	if !PlotsBuilt {
		return
	}
	for _, k := range []string{"freqsensor", "freqtime"} {
		if _, err := os.Stat(filepath.Join(dir, "clock_offset_offset_ns_clock=xo_ref=gnss-"+k+".png")); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}

func BenchmarkCorrelateDay(b *testing.B) {
	lp := synthClockAndTemperature(-28, 24, 0, false)
	c, _ := NewCollector(qClock)
	c.ReadLineProtocol(strings.NewReader(lp))
	clock, _ := c.Finish()
	sc, _ := NewCollector(Query{Measurement: "sensor", Field: "value", floats: true})
	sc.ReadLineProtocol(strings.NewReader(lp))
	sensor, _ := sc.Finish()
	o := CorrelateOptions{Measurement: "sensor", Field: "value"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Correlate(clock[0], sensor[0], o); err != nil {
			b.Fatal(err)
		}
	}
}
