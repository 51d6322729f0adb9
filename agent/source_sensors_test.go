package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
)

func sensorLines(b *collect.Batch) []string {
	var out []string
	for _, r := range b.Records {
		tags := map[string]string{}
		for _, t := range r.Tags {
			tags[t.Key] = t.Value
		}
		out = append(out, fmt.Sprintf("%s/%s/%s %s=%s", tags["source"], tags["device"], tags["sensor"], tags["unit"], r.Fields[0].Value()))
	}
	sort.Strings(out)
	return out
}

// TestSensorsSource: the fixture board's sensors, filtered by include
// patterns; a zone that cannot be read is an error naming it while the
// others ship; a chip that appears is found at the next rescan.
func TestSensorsSource(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	clock := time.Unix(1000, 0)
	cfg := Default().Sensors
	cfg.Include = []string{"hwmon/ina226/*", "thermal/*/*", "iio/*/voltage0"}
	s := newSensorsSource(cfg, sensors.NewFS(sys, dev), func() time.Time { return clock })
	defer s.Close()
	b := &collect.Batch{}
	err := s.Collect(t.Context(), b)
	if err == nil || !strings.Contains(err.Error(), "thermal_zone1/temp") {
		t.Errorf("the unreadable zone: %v", err)
	}
	want := []string{
		"hwmon/ina226/curr1 nA=412000000", "hwmon/ina226/in1 nV=5012000000", "hwmon/ina226/power1 uW=2065000",
		"iio/TI-am335x-adc.0.auto/voltage0 nV=900000000", "thermal/thermal_zone0/cpu_thermal u°C=47500000",
	}
	if got := sensorLines(b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records\n%v\nwant\n%v", got, want)
	}
	// A new chip: not seen before the rescan interval, seen after it.
	chip := filepath.Join(sys, "class", "hwmon", "hwmon7")
	os.MkdirAll(chip, 0o755)
	os.WriteFile(filepath.Join(chip, "name"), []byte("ina226\n"), 0o644)
	os.WriteFile(filepath.Join(chip, "power1_input"), []byte("1000\n"), 0o644)
	for _, tc := range []struct {
		after time.Duration
		n     int
	}{{time.Second, 5}, {cfg.Rescan, 6}} {
		clock = clock.Add(tc.after)
		b = &collect.Batch{}
		s.Collect(t.Context(), b)
		if len(b.Records) != tc.n {
			t.Errorf("after %v: %d records, want %d", tc.after, len(b.Records), tc.n)
		}
	}
	var self []string
	for _, f := range s.SelfFields() {
		self = append(self, f.Key+"="+f.Value())
	}
	if got := strings.Join(self, " "); got != "sensors=7 read_errors=3 scan_errors=0" {
		t.Errorf("self metrics %s", got)
	}
}

func TestSensorsSourceWithoutSensorsHasNoData(t *testing.T) {
	s := newSensorsSource(Default().Sensors, sensors.NewFS(t.TempDir(), t.TempDir()), time.Now)
	if err := s.Collect(t.Context(), &collect.Batch{}); !errors.Is(err, collect.ErrNoData) {
		t.Fatalf("no sensors: %v", err)
	}
}

var _ collect.SelfReporter = (*sensorsSource)(nil)

// Two hwmon chips of one name (two NVMe drives) read in one collection must
// not share a key: InfluxDB would keep one of them.
func TestSensorsOfTwoChipsWithOneNameStayApart(t *testing.T) {
	sys := t.TempDir()
	for i, v := range []string{"41850", "39850"} {
		chip := filepath.Join(sys, "class", "hwmon", fmt.Sprintf("hwmon%d", i))
		for name, val := range map[string]string{"name": "nvme", "temp1_input": v, "temp1_label": "Composite"} {
			if err := os.MkdirAll(chip, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(chip, name), []byte(val+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := Default().Sensors
	cfg.Thermal, cfg.IIO = false, false
	s := newSensorsSource(cfg, sensors.NewFS(sys, t.TempDir()), time.Now)
	defer s.Close()
	b := &collect.Batch{}
	if err := s.Collect(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, r := range b.Records {
		var tags []string
		for _, tg := range r.Tags {
			tags = append(tags, tg.Key+"="+tg.Value)
		}
		sort.Strings(tags)
		keys[r.Measurement+" "+strings.Join(tags, ",")] = true
	}
	if len(b.Records) != 2 || len(keys) != 2 {
		t.Fatalf("%d records with %d distinct tag sets: %v", len(b.Records), len(keys), keys)
	}
}
