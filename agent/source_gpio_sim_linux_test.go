package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/timebase"
)

// TestGPIOSourceCountsEveryEdgeOnGPIOSim runs the agent's GPIO source on a
// real kernel's gpio-sim (the QEMU rig's amd64 guest): a burst of edges into
// a 16-event queue, and every edge the kernel saw as an IRQ is an event, a
// counted kernel-queue loss, or counted as merged before queuing.
func TestGPIOSourceCountsEveryEdgeOnGPIOSim(t *testing.T) {
	sim := testbed.NewGPIOSim(t, 1)
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines, cc.Buffer = sim.Chip, []GPIOLineConfig{gpioLineCfg(0, "", "monotonic")}, 16
	cc.Lines[0].Edge = "both"
	d, err := newGPIOSource(cc, cc.Lines, sim.Path(), timebase.NewTranslators(), timebase.DomainUnknown)
	if err != nil {
		t.Fatal(err)
	}
	s, err := collect.Decode("gpio:"+sim.Chip, time.Second, 4096, d)
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, s)
	// The request is open once the line's IRQ shows.
	for deadline := time.Now().Add(5 * time.Second); !d.irqs.Live(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the line's IRQ never showed: %q", d.irqs.Why())
		}
	}
	const pulls = 2000
	for i := range pulls {
		sim.Pull(t, 0, i%2 == 0)
	}
	// Quiet: every IRQ handled and every queued edge read; then two checks
	// (the collection's After hook), the second judging the first's IRQs.
	time.Sleep(500 * time.Millisecond)
	b := &collect.Batch{Host: "h"}
	for range 2 {
		if err := s.Collect(context.Background(), b); err != nil && !errors.Is(err, collect.ErrNoData) {
			t.Fatal(err)
		}
	}
	checkRecordRules(t, b.Records)
	events := collecttest.Self(t, s, "line0_events").U
	lost := collecttest.Self(t, s, "line0_lost").U
	irqs := collecttest.Self(t, s, "line0_irqs").U
	merged := collecttest.Self(t, s, "line0_merged").U
	t.Logf("%d pulls: %d IRQs = %d events + %d lost from the kernel's queue + %d merged before queuing", pulls, irqs, events, lost, merged)
	if irqs == 0 || events+lost+merged != irqs {
		t.Errorf("%d IRQs != %d events + %d lost + %d merged", irqs, events, lost, merged)
	}
	if lost+merged == 0 {
		t.Logf("nothing lost at this rate: the burst did not overflow the queue")
	}
}
