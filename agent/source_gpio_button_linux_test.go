package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/internal/testbed/guest"
	"github.com/monagent/monagent/timebase"
)

// TestGPIOSourceOnPowerButton runs the agent's GPIO source in the rig's ARM
// guest on the PL061 line wired to QEMU's power button: three presses are
// six gpio_event records at their kernel stamps, and the line's IRQ count
// (read from the 32-bit ARM kernel's /proc/interrupts) equals the events.
func TestGPIOSourceOnPowerButton(t *testing.T) {
	chip, line, ok, err := guest.PowerButton()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("no GPIO line wired to a button the test can press (the rig's ARM guest sets MONAGENT_GUEST_POWER_BUTTON)")
	}
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines = chip, []GPIOLineConfig{gpioLineCfg(line, "power", "monotonic")}
	cc.Lines[0].Edge = "both"
	d, err := newGPIOSource(cc, cc.Lines, "/dev/"+chip, timebase.NewTranslators(), timebase.DomainUnknown)
	if err != nil {
		t.Fatal(err)
	}
	s, err := collect.Decode("gpio:"+chip, time.Second, 64, d)
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, s)
	for deadline := time.Now().Add(5 * time.Second); !d.irqs.Live(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the line's IRQ never showed: %q", d.irqs.Why())
		}
	}
	for range 3 {
		guest.Ask("powerdown")
		time.Sleep(400 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	b := &collect.Batch{Host: "h"}
	for range 2 {
		if err := s.Collect(context.Background(), b); err != nil && !errors.Is(err, collect.ErrNoData) {
			t.Fatal(err)
		}
	}
	pfx := fmt.Sprintf("line%d_", line)
	events, irqs := collecttest.Self(t, s, pfx+"events").U, collecttest.Self(t, s, pfx+"irqs").U
	lost, merged := collecttest.Self(t, s, pfx+"lost").U, collecttest.Self(t, s, pfx+"merged").U
	t.Logf("3 presses: %d IRQs, %d events, %d lost, %d merged; %d records", irqs, events, lost, merged, len(b.Records))
	if events != 6 || irqs != 6 || lost != 0 || merged != 0 {
		t.Errorf("want 6 edges, 6 IRQs, nothing lost or merged")
	}
	var last int64
	n := 0
	for _, r := range b.Records {
		if r.Measurement != "gpio_event" {
			continue
		}
		n++
		if r.TimeNS <= last {
			t.Errorf("gpio_event at %d after %d", r.TimeNS, last)
		}
		last = r.TimeNS
	}
	if n != 6 {
		t.Errorf("%d gpio_event records, want 6", n)
	}
}
