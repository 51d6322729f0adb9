package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
	"github.com/monagent/monagent/timebase"
)

// TestGPIOTriggerReadsSensorsAtEdges: edges fed through a FIFO into a line
// with a trigger on the fixture board: each selected edge outside the rate
// limit ships one gpio_trigger record at the edge's time with the matching
// sensors' values, read_delay_ns and kernel_ns; edges within min_interval are
// skipped and counted; the unreadable thermal zone is left out and counted.
func TestGPIOTriggerReadsSensorsAtEdges(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	f := newGPIOFixture(t, []GPIOLineConfig{gpioLineCfg(17, "drdy", "realtime")}, fakeModels(false), timebase.DomainUnknown, 4096)
	f.d.attachTriggers([]GPIOTriggerConfig{
		{Name: "power", Chip: "gpiochip9", Line: 17, Edge: "rising", MinInterval: 100 * time.Millisecond,
			Sensors: []string{"hwmon/ina226/*", "iio/*/voltage0", "thermal/*/*"}},
		{Name: "other_chip", Chip: "gpiochip1", Line: 17, Edge: "both", Sensors: []string{"hwmon/*/*"}},
	}, sensors.NewFS(sys, dev), nil)
	t.Cleanup(func() { f.d.Close() })

	rt, _ := timebase.Realtime.Now()
	ms := int64(time.Millisecond)
	stamps := []int64{rt - 500*ms, rt - 450*ms, rt - 420*ms, rt - 400*ms, rt - 350*ms}
	edges := []gpio.Edge{gpio.EdgeRising, gpio.EdgeRising, gpio.EdgeFalling, gpio.EdgeRising, gpio.EdgeRising}
	var evs []gpio.Event
	for i, s := range stamps {
		evs = append(evs, gpio.Event{TimestampNS: s, Offset: 17, Seqno: uint32(i + 1), LineSeqno: uint32(i + 1), Edge: edges[i]})
	}
	f.write(evs...)
	before, _ := timebase.Realtime.Now()
	recs := f.collect()
	after, _ := timebase.Realtime.Now()

	var trig []record.Record
	for _, r := range recs {
		if r.Measurement == "gpio_trigger" {
			trig = append(trig, r)
		}
	}
	if len(recs) != 5+2 || len(trig) != 2 {
		t.Fatalf("%d records, %d gpio_trigger; want 5 gpio_event + 2 gpio_trigger: %v", len(recs), len(trig), recs)
	}
	// The edge at -500 ms reads; -450 ms is within 100 ms of it (skipped);
	// the falling edge is not the rule's; -400 ms is 100 ms after the last
	// reading (reads); -350 ms is within 100 ms of it (skipped).
	wantValues := "hwmon/ina226/curr1=412000000 hwmon/ina226/in1=5012000000 hwmon/ina226/power1=2065000 " +
		"iio/TI-am335x-adc.0.auto/voltage0=900000000 thermal/thermal_zone0/cpu_thermal=47500000"
	for i, r := range trig {
		stamp := []int64{stamps[0], stamps[3]}[i]
		if r.TimeNS != stamp || gpioField(t, r, "kernel_ns").I != stamp {
			t.Errorf("trigger record %d at %d (kernel_ns %v), want the edge's time %d", i, r.TimeNS, r.Fields, stamp)
		}
		if r.Tag("trigger") != "power" || r.Tag("chip") != "gpiochip9" || r.Tag("line") != "17" || r.Tag("edge") != "rising" || r.Tag("host") != "h" {
			t.Errorf("trigger record %d tags %v", i, r.Tags)
		}
		if !slices.IsSortedFunc(r.Tags, func(a, b record.Tag) int { return strings.Compare(a.Key, b.Key) }) {
			t.Errorf("trigger record %d tags not sorted: %v", i, r.Tags)
		}
		var vals []string
		for _, fl := range r.Fields {
			if strings.Contains(fl.Key, "/") {
				vals = append(vals, fmt.Sprintf("%s=%d", fl.Key, fl.I))
			}
		}
		if got := strings.Join(vals, " "); got != wantValues {
			t.Errorf("trigger record %d values\n%s\nwant\n%s", i, got, wantValues)
		}
		// Read during the collection: after `before`, before `after`.
		if d := gpioField(t, r, "read_delay_ns").I; d < before-stamp || d > after-stamp {
			t.Errorf("trigger record %d: read_delay_ns %d, want [%d, %d] (edge to values read)", i, d, before-stamp, after-stamp)
		}
	}
	for key, want := range map[string]uint64{"trigger_power_readings": 2, "trigger_power_skipped": 2, "trigger_power_read_errors": 2} {
		if got := collecttest.Self(t, f.s, key).U; got != want {
			t.Errorf("%s %d, want %d", key, got, want)
		}
	}
	if got := collecttest.Self(t, f.s, "trigger_power_sensors").I; got != 6 {
		t.Errorf("trigger_power_sensors %d, want 6 (3 INA226, 1 ADC, 2 zones)", got)
	}
	for _, fl := range f.s.SelfFields() {
		if strings.HasPrefix(fl.Key, "trigger_other_chip_") {
			t.Errorf("a trigger of another chip attached to this one: %s", fl.Key)
		}
	}

	// min_interval 0 reads at every selected edge; the rule's edge filter
	// still applies.
	f.d.lines[0].triggers[0].cfg.MinInterval = 0
	rt, _ = timebase.Realtime.Now()
	f.write(gpio.Event{TimestampNS: rt, Offset: 17, Seqno: 6, LineSeqno: 6, Edge: gpio.EdgeRising},
		gpio.Event{TimestampNS: rt + 1, Offset: 17, Seqno: 7, LineSeqno: 7, Edge: gpio.EdgeRising})
	n := 0
	for _, r := range f.collect() {
		if r.Measurement == "gpio_trigger" {
			n++
		}
	}
	if n != 2 || collecttest.Self(t, f.s, "trigger_power_skipped").U != 2 {
		t.Errorf("min_interval 0: %d readings (want 2), skipped %d (want still 2)", n, collecttest.Self(t, f.s, "trigger_power_skipped").U)
	}
}

// TestGPIOTriggerWithoutSensorsRescans: a trigger whose patterns match
// nothing still ships its reading (read_delay_ns, kernel_ns) and says it has
// no sensors; a sensor that appears is found at the next rescan.
func TestGPIOTriggerWithoutSensorsRescans(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	clock := time.Unix(1000, 0)
	tr := newGPIOTrigger(GPIOTriggerConfig{Name: "x", Chip: "c", Line: 1, Edge: "both", Sensors: []string{"hwmon/ina219/*"}},
		sensors.NewFS(sys, dev), func() time.Time { return clock })
	t.Cleanup(func() { tr.found.Close() })
	if err := tr.found.Scan(); err != nil || len(tr.found.Sensors) != 0 {
		t.Fatalf("scan: %v, %d sensors; want none", err, len(tr.found.Sensors))
	}
	b := &collect.Batch{Host: "h"}
	rt, _ := timebase.Realtime.Now()
	tr.fire(b, &gpioEdge{ev: gpio.Event{TimestampNS: rt, Edge: gpio.EdgeFalling}}, rt)
	if len(b.Records) != 1 || len(b.Records[0].Fields) != 2 || b.Records[0].Tag("edge") != "falling" {
		t.Fatalf("records %v, want one with read_delay_ns and kernel_ns", b.Records)
	}
	writeSysfs(t, sys, "class/hwmon/hwmon9/name", "ina219\n")
	writeSysfs(t, sys, "class/hwmon/hwmon9/in0_input", "3300\n")
	clock = clock.Add(triggerRescan)
	tr.cfg.MinInterval = 0
	tr.fire(b, &gpioEdge{ev: gpio.Event{TimestampNS: rt + 1, Edge: gpio.EdgeRising}}, rt+1)
	if len(b.Records) != 2 {
		t.Fatalf("%d records, want 2", len(b.Records))
	}
	if v, ok := b.Records[1].Field("hwmon/ina219/in0"); !ok || v.I != 3300e6 {
		t.Errorf("after the rescan: %v, want hwmon/ina219/in0=3300000000", b.Records[1].Fields)
	}
}

// TestGPIOTriggerReadsAChipThatCameBack: a chip removed between two edges
// is one counted read error (the reading ships without it), and is read
// again at the first edge after it came back, without waiting for a
// periodic listing.
func TestGPIOTriggerReadsAChipThatCameBack(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	writeSysfs(t, sys, "class/hwmon/hwmon9/name", "ina219\n")
	writeSysfs(t, sys, "class/hwmon/hwmon9/in0_input", "3300\n")
	tr := newGPIOTrigger(GPIOTriggerConfig{Name: "x", Chip: "c", Line: 1, Edge: "both", Sensors: []string{"hwmon/ina219/*"}},
		sensors.NewFS(sys, dev), func() time.Time { return time.Unix(1000, 0) }) // no periodic listing
	t.Cleanup(func() { tr.found.Close() })
	if err := tr.found.Scan(); err != nil || len(tr.found.Sensors) != 1 {
		t.Fatalf("scan: %v, %d sensors; want 1", err, len(tr.found.Sensors))
	}
	b := &collect.Batch{Host: "h"}
	rt, _ := timebase.Realtime.Now()
	edge := func(i int64) {
		tr.fire(b, &gpioEdge{ev: gpio.Event{TimestampNS: rt + i, Edge: gpio.EdgeRising}}, rt+i)
	}
	tr.cfg.MinInterval = 0
	hwmon := filepath.Join(sys, "class/hwmon/hwmon9")
	if err := os.RemoveAll(hwmon); err != nil {
		t.Fatal(err)
	}
	edge(0)
	// Back, numbered anew as the kernel does.
	writeSysfs(t, sys, "class/hwmon/hwmon10/name", "ina219\n")
	writeSysfs(t, sys, "class/hwmon/hwmon10/in0_input", "3400\n")
	edge(1)
	if len(b.Records) != 2 || tr.readErrors != 1 {
		t.Fatalf("%d records, %d read errors; want 2 and 1", len(b.Records), tr.readErrors)
	}
	if _, ok := b.Records[0].Field("hwmon/ina219/in0"); ok {
		t.Errorf("a reading of the removed chip: %v", b.Records[0].Fields)
	}
	if v, ok := b.Records[1].Field("hwmon/ina219/in0"); !ok || v.I != 3400e6 {
		t.Errorf("after it came back: %v, want hwmon/ina219/in0=3400000000", b.Records[1].Fields)
	}
}

func writeSysfs(t *testing.T, sys, rel, content string) {
	t.Helper()
	p := filepath.Join(sys, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
