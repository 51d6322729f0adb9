package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
	"github.com/monagent/monagent/timebase"
)

// TestGPIOTriggerReadsHwmonOnRealKernel: rising edges of a gpio-sim line
// trigger readings of the LM75 and the INA226 on i2c-stub (the rig's amd64
// guest), through the gpio.triggers path with the agent's collection every
// 10 ms (gpio.interval): one gpio_trigger record per rising edge at the
// edge's kernel stamp (REALTIME line clock), with the values the chips hold,
// and the latency from the edge's stamp to the reading (read_delay_ns)
// measured, its distribution logged.
func TestGPIOTriggerReadsHwmonOnRealKernel(t *testing.T) {
	sim := testbed.NewGPIOSim(t, 1)
	stub := sensorstest.RequireI2CStub(t)
	const lm75, ina226 = sensorstest.StubLM75, sensorstest.StubINA226
	if err := stub.WriteWordSwapped(lm75, 0, 0x1a80); err != nil { // 26.5 °C
		t.Fatal(err)
	}
	if err := stub.WriteWordSwapped(ina226, 3, 160); err != nil { // 160 × 6.25 mW
		t.Fatal(err)
	}
	stub.BindChips(t)

	d, s := newSimSource(t, sim, gpioLineCfg(0, "drdy", "realtime"), 10*time.Millisecond, func(d *gpioSource) {
		d.attachTriggers([]GPIOTriggerConfig{{Name: "power", Chip: sim.Chip, Line: 0, Edge: "rising",
			Sensors: []string{"hwmon/ina226/power1", "hwmon/lm75/temp1"}}}, sensors.NewFS("", ""), nil)
	})
	runEvents(t, s)
	waitLineIRQ(t, d)

	// The agent's loop for this source: a collection every gpio.interval.
	var mu sync.Mutex
	var recs []record.Record
	var collectErr error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			b := &collect.Batch{Host: "h"}
			err := s.Collect(context.Background(), b)
			mu.Lock()
			recs = append(recs, b.Records...)
			if err != nil && !errors.Is(err, collect.ErrNoData) {
				collectErr = err
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const edges = 200
	for range edges { // 50 rising edges a second
		sim.Pull(t, 0, true)
		time.Sleep(10 * time.Millisecond)
		sim.Pull(t, 0, false)
		time.Sleep(10 * time.Millisecond)
	}
	// Quiet: the last edges read, and the IRQ account's snapshots judged
	// (a reader silent for 100 ms, gpio.judgeDelay, at a check after it).
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-done
	if collectErr != nil {
		t.Error(collectErr)
	}

	var delays []int64
	rising := 0
	for _, r := range recs {
		switch r.Measurement {
		case "gpio_event":
			if r.Tag("edge") == "rising" {
				rising++
			}
		case "gpio_trigger":
			kernel, _ := r.Field("kernel_ns")
			delay, _ := r.Field("read_delay_ns")
			power, _ := r.Field("hwmon/ina226/power1")
			temp, _ := r.Field("hwmon/lm75/temp1")
			if r.TimeNS != kernel.I || power.I != 1_000_000 || temp.I != 26_500_000 || delay.I <= 0 {
				t.Errorf("gpio_trigger at %d: kernel_ns %d, power %d µW, temp %d µ°C, read_delay_ns %d; want at the edge's stamp, 1000000, 26500000, > 0",
					r.TimeNS, kernel.I, power.I, temp.I, delay.I)
			}
			delays = append(delays, delay.I)
		}
	}
	readings := collecttest.Self(t, s, "trigger_power_readings").U
	readErrors := collecttest.Self(t, s, "trigger_power_read_errors").U
	lost := collecttest.Self(t, s, "line0_lost").U
	events := collecttest.Self(t, s, "line0_events").U
	irqs := collecttest.Self(t, s, "line0_irqs").U
	merged := collecttest.Self(t, s, "line0_merged").U
	t.Logf("%d edge pairs pulled: %d rising gpio_event, %d gpio_trigger records, %d readings, %d read errors; the line's %d IRQs = %d events + %d lost from the kernel's queue + %d merged before queuing",
		edges, rising, len(delays), readings, readErrors, irqs, events, lost, merged)
	if len(delays) != rising || readings != uint64(rising) || readErrors != 0 {
		t.Errorf("want each of the %d rising edges recorded with one gpio_trigger record and one reading, no read error", rising)
	}
	// Every edge is recorded or counted: a busy machine (the emulator's vCPU
	// shared with the host's load) may run the IRQ thread late enough to
	// merge a pull and its release (counted merged), or keep gpio-sim's own
	// interrupt pending across pulls (fewer IRQs than pulls: no consumer can
	// see those). What load cannot change is the accounting.
	if irqs != events+lost+merged {
		t.Errorf("%d IRQs ≠ %d events + %d lost + %d merged", irqs, events, lost, merged)
	}
	if missing := uint64(edges - rising); missing > 2*edges-irqs+lost+merged {
		t.Errorf("%d rising edges missing, more than the %d pulls without an IRQ + %d lost + %d merged", missing, 2*edges-irqs, lost, merged)
	} else if missing > 0 {
		t.Logf("%d rising edges missing, accounted for: %d pulls without an IRQ, %d lost, %d merged", missing, 2*edges-irqs, lost, merged)
	}
	if len(delays) == 0 {
		return
	}
	slices.Sort(delays)
	q := func(p float64) time.Duration { return time.Duration(delays[int(p*float64(len(delays)-1))]) }
	t.Logf("edge stamp to reading, %d readings (gpio.interval 10ms): min %v p50 %v p90 %v p99 %v max %v",
		len(delays), time.Duration(delays[0]), q(0.5), q(0.9), q(0.99), time.Duration(delays[len(delays)-1]))
}

// newSimSource is the GPIO source of line of a gpio-sim chip, both edges,
// collected every interval, set up by with; not started.
func newSimSource(t *testing.T, sim *testbed.GPIOSim, line GPIOLineConfig, interval time.Duration, with func(*gpioSource)) (*gpioSource, *collect.EventSource[gpioEdge]) {
	t.Helper()
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines = sim.Chip, []GPIOLineConfig{line}
	cc.Lines[0].Edge = "both"
	d, err := newGPIOSource(cc, cc.Lines, sim.Path(), timebase.NewTranslators(), timebase.DomainUnknown)
	if err != nil {
		t.Fatal(err)
	}
	with(d)
	s, err := collect.Decode("gpio:"+sim.Chip, interval, cc.Ring, d)
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

// waitLineIRQ waits until the source's line request is open (its IRQ shows).
func waitLineIRQ(t *testing.T, d *gpioSource) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !d.irqs.Live() {
		if time.Now().After(deadline) {
			t.Fatalf("the line's IRQ never showed: %q", d.irqs.Why())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
