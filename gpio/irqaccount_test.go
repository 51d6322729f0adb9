package gpio

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestIRQAccountCountsMergedEdges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "interrupts")
	write := func(line0, line3 uint64) {
		t.Helper()
		b := fmt.Sprintf("           CPU0       CPU1\n 24: %d 0 gpio-sim 0 Edge monagent-gpiochip1\n 25: %d 0 gpio-sim 3 Edge monagent-gpiochip1\n 26: 77 0 gpio-sim 0 Edge gpiomon\n", line0, line3)
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := newIRQAccount(path, "monagent-gpiochip1", []int{0, 3})
	// queue(n): line 0's events + counted losses in the open request are n
	// (its last line_seqno), as the reader's loss tracker says.
	var lt LossTracker
	queue := func(n uint32) {
		lt.Observe(&Event{Offset: 0, LineSeqno: n})
		w.Queued(&lt)
	}

	write(1000, 5) // counts before the request: the baseline
	w.Start()
	if why := w.Why(); why != "" {
		t.Fatal(why)
	}
	write(1100, 5) // 100 IRQs on line 0
	queue(60)      // read so far
	w.Check()      // judges the IRQs of the previous check (none)
	if _, _, ok := w.Counts(0); !ok {
		t.Fatal("line 0's IRQ not found")
	}
	if irqs, merged := counts(w, 0); irqs != 100 || merged != 0 {
		t.Errorf("after one check: irqs %d merged %d; want 100, 0 (edges may still be on their way)", irqs, merged)
	}
	if a := testing.AllocsPerRun(100, func() { w.Queued(&lt) }); a != 0 {
		t.Errorf("Queued allocates %.1f times", a)
	}
	queue(90) // the rest arrived; 10 never will
	w.Check()
	if irqs, merged := counts(w, 0); irqs != 100 || merged != 10 {
		t.Errorf("irqs %d merged %d; want 100, 10", irqs, merged)
	}
	// While edges stream, merged never goes down: 50 more IRQs, 40 more
	// events (the seqno counts the new ones too).
	write(1150, 5)
	w.Check() // judges the 100 of the previous check: 100-90
	queue(130)
	w.Check() // judges 150 against 130: 20 so far
	if irqs, merged := counts(w, 0); irqs != 150 || merged != 20 {
		t.Errorf("streaming: irqs %d merged %d; want 150, 20", irqs, merged)
	}
	// The request fails while 10 more IRQs came and 5 were read: at stop
	// every IRQ is judged, so irqs = events + lost + merged holds.
	write(1160, 5)
	queue(135)
	w.Stop()
	if irqs, merged := counts(w, 0); irqs != 160 || merged != 25 || irqs != 135+merged {
		t.Errorf("after stop: irqs %d merged %d; want 160 = 135 + 25", irqs, merged)
	}
	// It reopens: counts carry over; the new request's seqnos start again.
	lt = LossTracker{}
	w.Start()
	write(1180, 5)
	queue(20)
	w.Check()
	w.Check()
	if irqs, merged := counts(w, 0); irqs != 180 || merged != 25 {
		t.Errorf("after a reopen: irqs %d merged %d; want 180, 25", irqs, merged)
	}
	// A failed read says why; the next good one clears it.
	os.WriteFile(path, []byte("garbage"), 0o644)
	w.Check()
	if w.Why() == "" {
		t.Error("an unparsable /proc/interrupts gives no reason")
	}
	write(1180, 5)
	w.Check()
	if why := w.Why(); why != "" {
		t.Errorf("still unavailable after a good read: %q", why)
	}
	if irqs, merged := counts(w, 3); irqs != 0 || merged != 0 {
		t.Errorf("quiet line 3: irqs %d merged %d", irqs, merged)
	}
	// A line with no IRQ row gets no fields; an unreadable file says why.
	w2 := newIRQAccount(path, "monagent-gpiochip9", []int{0})
	w2.Start()
	if _, _, ok := w2.Counts(0); ok || w2.Why() != "no IRQ named monagent-gpiochip9 in "+path {
		t.Errorf("found %v, why %q", ok, w2.Why())
	}
	w3 := newIRQAccount(filepath.Join(t.TempDir(), "absent"), "x", []int{0})
	w3.Start()
	if w3.Why() == "" {
		t.Error("an absent /proc/interrupts gives no reason")
	}
}

func counts(w *IRQAccount, off int) (irqs, merged uint64) {
	irqs, merged, _ = w.Counts(off)
	return irqs, merged
}
