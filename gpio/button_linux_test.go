package gpio

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed/guest"
	"github.com/monagent/monagent/timebase"
)

// TestPowerButtonEdges runs in the ARM guest of the kernel-in-the-loop rig
// (internal/testbed/guest): QEMU's virt board wires its power button to line
// 3 of the PL061 GPIO controller, a real interrupt-driven driver on a 32-bit
// ARM kernel. Each press the test asks the host for gives a rising edge and,
// 100 ms later, a falling one. It checks, for both event clocks: chip and
// line info, the line-info watch, the holder named on a second request, both
// edges of three presses read in one batch, seqnos without gaps, stamps in
// the requested clock, and the line released on close.
func TestPowerButtonEdges(t *testing.T) {
	chipName, line, ok, err := guest.PowerButton()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("no GPIO line wired to a button the test can press (the rig's ARM guest sets MONAGENT_GUEST_POWER_BUTTON)")
	}
	chip, err := Open(chipName)
	if err != nil {
		t.Fatal(err)
	}
	defer chip.Close()
	info := chip.Info()
	t.Logf("chip %+v", info)
	if info.Lines != 8 || !strings.Contains(info.Label, "pl061") && !strings.Contains(info.Label, "9030000") {
		t.Errorf("chip info %+v: want the virt board's PL061 (8 lines)", info)
	}
	li, err := chip.WatchLineInfo(line)
	if err != nil {
		t.Fatal(err)
	}
	if li.Flags&FlagUsed != 0 {
		t.Fatalf("line %d is held (%+v): the guest must boot without the gpio-keys node", line, li)
	}
	for _, clock := range []EventClock{ClockMonotonic, ClockRealtime} {
		t.Run(clock.String(), func(t *testing.T) { pressAndRead(t, chip, line, clock) })
	}
}

func pressAndRead(t *testing.T, chip *Chip, line int, clock EventClock) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := timebase.Monotonic
	if clock == ClockRealtime {
		src = timebase.Realtime
	}
	before, _ := src.Now()
	req, err := chip.RequestLines([]int{line}, LineConfig{Consumer: "monagent-button", Edge: DetectBoth, Clock: clock, EventBufferSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			req.Close()
		}
	}()
	if ch, err := chip.ReadInfoChange(ctx); err != nil || ch.Kind != ChangeRequested || ch.Info.Consumer != "monagent-button" {
		t.Errorf("info change %+v, %v; want line %d requested by monagent-button", ch, err, line)
	}
	_, err = chip.RequestLines([]int{line}, LineConfig{Edge: DetectRising})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), `held by "monagent-button"`) {
		t.Errorf("second request: %v; want busy, naming the holder", err)
	}

	// Three presses, 400 ms apart; nothing is read until all six edges are
	// queued, so one read drains them in a batch.
	const presses = 3
	for range presses {
		guest.Ask("powerdown")
		time.Sleep(400 * time.Millisecond)
	}
	rd := req.Reader(64)
	buf := make([]Event, 64)
	var evs []Event
	var lost uint64
	reads := 0
	for len(evs) < 2*presses {
		n, l, err := rd.Read(ctx, buf)
		if err != nil {
			t.Fatalf("after %d events: %v (did the host press the button?)", len(evs), err)
		}
		reads++
		evs, lost = append(evs, buf[:n]...), lost+l
	}
	after, _ := src.Now()
	if lost != 0 || len(evs) != 2*presses {
		t.Fatalf("%d events, %d lost; want %d and none lost", len(evs), lost, 2*presses)
	}
	t.Logf("%d edges in %d reads", len(evs), reads)
	for i, e := range evs {
		want := EdgeRising
		if i%2 == 1 {
			want = EdgeFalling
		}
		if e.Edge != want || e.Seqno != uint32(i+1) || e.LineSeqno != uint32(i+1) || int(e.Offset) != line || e.Clock != clock {
			t.Errorf("event %d = %+v; want %v, seqno %d", i, e, want, i+1)
		}
		if e.TimestampNS < before || e.TimestampNS > after || i > 0 && e.TimestampNS <= evs[i-1].TimestampNS {
			t.Errorf("event %d stamped %d: outside [%d, %d] of %v or not after its predecessor", i, e.TimestampNS, before, after, clock)
		}
		if i%2 == 1 {
			// QEMU releases the button 100 ms (virtual time) after pressing it.
			if held := time.Duration(e.TimestampNS - evs[i-1].TimestampNS); held < 50*time.Millisecond || held > time.Second {
				t.Errorf("press %d held %v; QEMU holds it 100 ms", i/2+1, held)
			} else {
				t.Logf("press %d held %v", i/2+1, held)
			}
		}
	}
	if reads > 2 {
		t.Errorf("%d reads for %d queued edges: the batch read should drain them at once", reads, len(evs))
	}
	if err := req.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if ch, err := chip.ReadInfoChange(ctx); err != nil || ch.Kind != ChangeReleased {
		t.Errorf("info change after close %+v, %v; want released", ch, err)
	}
	if li, err := chip.LineInfo(line); err != nil || li.Flags&FlagUsed != 0 {
		t.Errorf("line info after close %+v, %v; want free", li, err)
	}
}
