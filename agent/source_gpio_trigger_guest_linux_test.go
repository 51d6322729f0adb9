package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// iioDummyConfigfs is where iio_simple_dummy devices are made
// (drivers/iio/dummy: industrialio-sw-device's configfs, type "dummy").
const iioDummyConfigfs = "/sys/kernel/config/iio/devices/dummy"

// newIIODummy makes an iio_simple_dummy device named name for the test, or
// skips it where the module is absent (the rig's amd64 guest has it).
func newIIODummy(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat(iioDummyConfigfs); err != nil {
		t.Skipf("no iio_simple_dummy device can be made here: %v (needs the iio_dummy module and configfs; the rig's amd64 guest has them)", err)
	}
	dir := filepath.Join(iioDummyConfigfs, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
}

// TestGPIOTriggerReadsIIOOnGPIOSim: gpio.triggers on a real kernel. A
// gpio-sim line's rising edges trigger one-shot readings of an
// iio_simple_dummy ADC channel through sysfs while the collection runs
// every 10 ms, as gpio.interval 10ms would: every rising edge gives one
// gpio_trigger record at the edge's kernel stamp (REALTIME) with the
// channel's value, and read_delay_ns (the reading's REALTIME stamp less the
// edge's) has the distribution logged, the wait for the next collection
// included.
func TestGPIOTriggerReadsIIOOnGPIOSim(t *testing.T) {
	sim := testbed.NewGPIOSim(t, 1)
	const dev = "trigger_adc"
	newIIODummy(t, dev)
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines = sim.Chip, []GPIOLineConfig{gpioLineCfg(0, "drdy", "realtime")}
	d, err := newGPIOSource(cc, cc.Lines, sim.Path(), timebase.NewTranslators(), timebase.DomainUnknown)
	if err != nil {
		t.Fatal(err)
	}
	d.attachTriggers([]GPIOTriggerConfig{{Name: "adc", Chip: sim.Chip, Line: 0, Edge: "rising",
		Sensors: []string{"iio/" + dev + "/voltage0"}}}, sensors.NewFS("/sys", "/dev"), nil)
	if n := len(d.lines[0].triggers[0].found.Sensors); n != 1 {
		t.Fatalf("the trigger found %d sensors for iio/%s/voltage0, want 1", n, dev)
	}
	s, err := collect.Decode("gpio:"+sim.Chip, 10*time.Millisecond, 4096, d)
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, s)
	for deadline := time.Now().Add(5 * time.Second); !d.irqs.Live(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the line's IRQ never showed: %q", d.irqs.Why())
		}
	}

	// The collection, every 10 ms, beside the edges.
	var (
		mu   sync.Mutex
		recs []record.Record
	)
	collectOnce := func() {
		b := &collect.Batch{Host: "h"}
		if err := s.Collect(context.Background(), b); err != nil && !errors.Is(err, collect.ErrNoData) {
			t.Error(err)
		}
		mu.Lock()
		recs = append(recs, b.Records...)
		mu.Unlock()
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.C:
				collectOnce()
			}
		}
	})
	const rising = 200
	for i := range 2 * rising {
		sim.Pull(t, 0, i%2 == 0)
		time.Sleep(time.Duration(3+i%5) * time.Millisecond) // out of step with the collection
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	wg.Wait()
	collectOnce()
	checkRecordRules(t, recs)

	var risingAt []int64
	var trig []record.Record
	for _, r := range recs {
		switch {
		case r.Measurement == "gpio_event" && r.Tag("edge") == "rising":
			risingAt = append(risingAt, r.TimeNS)
		case r.Measurement == "gpio_trigger":
			trig = append(trig, r)
		}
	}
	lost := collecttest.Self(t, s, "line0_lost").U + collecttest.Self(t, s, "line0_merged").U
	if len(risingAt) == 0 || len(trig) != len(risingAt) {
		t.Fatalf("%d rising edges recorded (%d lost or merged), %d gpio_trigger records: want one per rising edge", len(risingAt), lost, len(trig))
	}
	raw, err := os.ReadFile(d.lines[0].triggers[0].found.Sensors[0].Path)
	if err != nil {
		t.Errorf("the channel's attribute: %v", err)
	}
	delays := make([]int64, 0, len(trig))
	for i, r := range trig {
		if r.TimeNS != risingAt[i] || gpioField(t, r, "kernel_ns").I != r.TimeNS {
			t.Errorf("gpio_trigger %d at %d, want its edge's stamp %d", i, r.TimeNS, risingAt[i])
		}
		if _, ok := r.Field("iio/" + dev + "/voltage0"); !ok {
			t.Errorf("gpio_trigger %d has no reading of the ADC: %v", i, r.Fields)
		}
		dl := gpioField(t, r, "read_delay_ns").I
		if dl <= 0 || dl > int64(5*time.Second) {
			t.Errorf("gpio_trigger %d: read_delay_ns %d, want within (0, 5 s]", i, dl)
		}
		delays = append(delays, dl)
	}
	if n := collecttest.Self(t, s, "trigger_adc_read_errors").U; n != 0 {
		t.Errorf("%d read errors", n)
	}
	slices.Sort(delays)
	q := func(p int) time.Duration { return time.Duration(delays[(len(delays)-1)*p/100]) } // nearest rank
	t.Logf("%d rising edges on %s, each read iio/%s/voltage0 (%s = %q); edge stamp to reading, collection every 10 ms: "+
		"min %v, p50 %v, p90 %v, p99 %v, max %v", len(trig), sim.Chip, dev, filepath.Base(d.lines[0].triggers[0].found.Sensors[0].Path),
		raw, q(0), q(50), q(90), q(99), q(100))
}
