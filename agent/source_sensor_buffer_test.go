package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
	"github.com/monagent/monagent/timebase"
)

// runEvents runs an event source's reader until the test ends.
func runEvents[E any](t *testing.T, s *EventSource[E]) {
	t.Helper()
	stop := startEvents(s)
	t.Cleanup(func() { stop(); s.Close() })
}

func waitRing(t *testing.T, s *EventSource[scan], n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.Queue().Waiting() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d samples in the ring, want %d", s.Queue().Waiting(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scanLine(r record.Record) string {
	var f []string
	for _, x := range r.Fields {
		f = append(f, x.Key+"="+x.Value())
	}
	return fmt.Sprintf("%d %s", r.TimeNS, strings.Join(f, ","))
}

// TestSensorBufferSource: the fixture ADC's three buffered samples (kernel
// timestamps in MONOTONIC_RAW) go through the ring; with the clock source's
// model they ship at their REALTIME, without one at their read time with the
// kernel timestamp kept and counted.
func TestSensorBufferSource(t *testing.T) {
	const offset = 5_000_000_000 // REALTIME - MONOTONIC_RAW in the model
	for _, model := range []bool{true, false} {
		t.Run(fmt.Sprintf("model=%v", model), func(t *testing.T) {
			fs := sensors.NewFS(sensorstest.Board(t))
			trs := NewTranslators()
			if model {
				tr := trs.Get(timebase.DomainMonotonicRaw, timebase.DomainRealtime, 8)
				for i := int64(0); i < 4; i++ {
					raw := 1_700_000_000_000_000_000 + i*1_000_000_000
					tr.Add(timebase.Sample{Local: raw, Ref: raw + offset, DelayNS: 50})
				}
			}
			s, err := newSensorBufferSource(fs, SensorBufferConfig{Device: "TI-am335x-adc.0.auto", Channels: []string{"voltage0", "voltage1"}, Length: 16, Ring: 4}, trs, nil)
			if err != nil {
				t.Fatal(err)
			}
			runEvents(t, s)
			waitRing(t, s, 3)
			b := &Batch{}
			if err := s.Collect(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range b.Records {
				if r.Measurement != "sensor_scan" {
					t.Fatalf("measurement %s", r.Measurement)
				}
				got = append(got, scanLine(r))
			}
			var want []string
			for i, v := range [][2]int64{{900_000_000, 1_799_560_547}, {0, 439_453}, {1_799_560_547, 899_560_547}} {
				kns := 1_700_000_000_000_000_000 + int64(i)*10_000_000
				if model {
					want = append(want, fmt.Sprintf("%d voltage0=%d,voltage1=%d", kns+offset, v[0], v[1]))
				} else {
					want = append(want, fmt.Sprintf("%d voltage0=%d,voltage1=%d,kernel_ns=%d", b.Records[i].TimeNS, v[0], v[1], kns))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("records\n%v\nwant\n%v", got, want)
			}
			// Samples of one read shipped at the read time still have keys of
			// their own (InfluxDB would keep only the last of equal keys).
			times := map[int64]bool{}
			for _, r := range b.Records {
				times[r.TimeNS] = true
			}
			if len(times) != len(b.Records) {
				t.Errorf("%d records share %d times", len(b.Records), len(times))
			}
			if f, _ := field(s.SelfFields(), "untranslated"); (f.U == 3) == model {
				t.Errorf("untranslated %d", f.U)
			}
			if err := s.Collect(t.Context(), &Batch{}); !errors.Is(err, ErrNoData) {
				t.Errorf("an empty ring: %v", err)
			}
		})
	}
}

func TestSensorBufferErrors(t *testing.T) {
	fs := sensors.NewFS(sensorstest.Board(t))
	for _, tc := range []struct {
		cfg  SensorBufferConfig
		want string
	}{
		{SensorBufferConfig{Device: "ads1115", Channels: []string{"voltage0"}, Length: 1, Ring: 4}, `no IIO device "ads1115"`},
		{SensorBufferConfig{Device: "iio:device0", Channels: []string{"voltage5"}, Length: 1, Ring: 4}, "no scan element voltage5"},
		{SensorBufferConfig{Device: "bmp280", Channels: []string{"temp"}, Length: 1, Ring: 4}, "has no buffer"},
	} {
		if _, err := newSensorBufferSource(fs, tc.cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestSensorBufferRingOverflowIsCounted: a ring of two for three samples:
// two ship, one is counted in ring_dropped.
func TestSensorBufferRingOverflowIsCounted(t *testing.T) {
	fs := sensors.NewFS(sensorstest.Board(t))
	s, err := newSensorBufferSource(fs, SensorBufferConfig{Device: "iio:device0", Channels: []string{"voltage0"}, Length: 16, Ring: 2}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, s)
	for deadline := time.Now().Add(5 * time.Second); s.Queue().RingDropped() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	b := &Batch{}
	s.Collect(t.Context(), b)
	var self []string
	for _, f := range s.SelfFields() {
		self = append(self, f.Key+"="+f.Value())
	}
	if len(b.Records) != 2 || !strings.Contains(strings.Join(self, " "), "ring_dropped=1 ") {
		t.Fatalf("%d records, self %v", len(b.Records), self)
	}
}
