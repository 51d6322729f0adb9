package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/internal/testbed/guest"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// TestPHCSourceOnAFrozenPHC runs in the kernel-in-the-loop rig's guests,
// whose e1000e PHC QEMU never advances: the phc source records its readings
// but says the clock is not advancing, counts them, and keeps no model of it
// (a model would put every stamp translated through it at one instant).
func TestPHCSourceOnAFrozenPHC(t *testing.T) {
	iface := os.Getenv("MONAGENT_GUEST_PHC_IFACE")
	if iface == "" {
		t.Skip("no NIC whose PHC is known to be stopped (the rig's guests set MONAGENT_GUEST_PHC_IFACE)")
	}
	c := Default()
	c.PHC.Interfaces = []string{iface}
	// The system clock judged against it, whatever the PHC reads (a
	// threshold of centuries): LOCKED on the first reading, then HOLDOVER
	// when the PHC is found stopped.
	c.PHC.Judge = JudgeConfig{Enabled: true, Threshold: 250 * 365 * 24 * time.Hour, Holdover: time.Hour, MinSamples: 1}
	c.PHC.Timescale = "utc"
	tr := timebase.NewTranslators()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srcs, err := buildPHCSources(&Env{Config: &c, Log: log, Translators: tr, judges: judging.New(judging.Options{Log: log})})
	if err != nil || len(srcs) != 1 {
		t.Fatalf("%d sources, %v", len(srcs), err)
	}
	s := srcs[0].(*phcSource)
	defer s.Close()
	var errs []error
	var states []string
	records := 0
	for i := range 3 {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		b := &collect.Batch{Host: "h"}
		errs = append(errs, s.Collect(context.Background(), b))
		for _, r := range b.Records {
			if r.Measurement == "sync_state" {
				to, _ := r.Field("to")
				reason, _ := r.Field("reason")
				states = append(states, to.S+": "+reason.S)
			} else if r.Measurement == "phc_offset" {
				records++ // not the vote's reference_check records
			}
		}
	}
	// The holdover's prediction grows the bound at the drift two samples
	// can show, their bounds included: with the frozen PHC's bounds of ~57
	// years over 0.2 s that is beyond any rate, so the predicted bound
	// passes even centuries within a second, and a loaded machine's slower
	// collections may already see FREERUN: allowed, and only then.
	wantStates := []string{"LOCKED: " + string(judge.ReasonLocked), "HOLDOVER: " + string(judge.ReasonUnsynced)}
	predicted := append(slices.Clone(wantStates), "FREERUN: "+string(judge.ReasonPredicted))
	if !slices.Equal(states, wantStates) && !slices.Equal(states, predicted) {
		t.Errorf("sync_state transitions %q, want %q (or then %q)", states, wantStates, predicted[2])
	}
	if errs[0] != nil || !errors.Is(errs[1], phc.ErrNotAdvancing) || !errors.Is(errs[2], phc.ErrNotAdvancing) {
		t.Fatalf("collections: %v; want the first fine, the next two naming a PHC not advancing", errs)
	}
	t.Logf("%v", errs[2])
	want := uint64(2 * len(c.PHC.Against))
	if got := phcCounter(s, "not_advancing"); got != want || records != 3*len(c.PHC.Against) {
		t.Errorf("not_advancing %d, want %d; %d phc_offset records, want %d", got, want, records, 3*len(c.PHC.Against))
	}
	for _, a := range c.PHC.Against {
		sys, _ := timebase.ParseDomain(a)
		if _, err := tr.Move(timebase.Timestamp{NS: 1e9, Domain: s.domain}, sys); err == nil {
			t.Errorf("a model moves stamps of the stopped PHC to %s", sys)
		}
	}
}

// TestPHCSourceSeesTheGuestPHCSet runs in the kernel-in-the-loop rig's
// guests only (the ARM guest's run list names it): it sets the guest's e1000e PHC with clock_settime on the
// device's clock id, as phc_ctl's "set" does, 37 s ahead and then 100 ms
// back (less than half the 200 ms between collections), while the phc
// source measures it. The reading after each set records one phc_step: the
// PHC moved the amount set plus whatever it ran on its own in between (QEMU's
// e1000e clock does not run), the step is that less what the source
// predicted, beyond the bound, and no model of the PHC is left to move
// stamps with. It never touches a clock outside the guest: it runs only as
// the guest's init's child, on the PHC of the rig's NIC.
func TestPHCSourceSeesTheGuestPHCSet(t *testing.T) {
	iface := os.Getenv("MONAGENT_GUEST_PHC_IFACE")
	if iface == "" || guest.Name() == "" {
		t.Skip("sets a PHC: runs only in the rig's guests (MONAGENT_GUEST, MONAGENT_GUEST_PHC_IFACE)")
	}
	if init, err := os.Readlink("/proc/1/exe"); err != nil || init != "/init" {
		t.Skipf("PID 1 is %q (%v), not the rig's guest init: this is no guest", init, err)
	}
	c := Default()
	c.PHC.Interfaces = []string{iface}
	tr := timebase.NewTranslators()
	srcs, err := buildPHCSources(&Env{Config: &c, Log: slog.New(slog.DiscardHandler), Translators: tr})
	if err != nil || len(srcs) != 1 {
		t.Fatalf("%d sources, %v", len(srcs), err)
	}
	s := srcs[0].(*phcSource)
	defer s.Close()
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clk := timebase.NewDynamicClock(f.Fd(), timebase.DomainRealtime) // the domain is not used
	set := func(by int64) {
		var ts unix.Timespec
		if err := unix.ClockGettime(clk.ID(), &ts); err != nil {
			t.Fatal(err)
		}
		ts = unix.NsecToTimespec(ts.Nano() + by)
		if err := unix.ClockSettime(clk.ID(), &ts); err != nil {
			t.Fatalf("clock_settime on %s: %v", s.path, err)
		}
	}
	const interval = 200 * time.Millisecond
	collect := func() *collect.Batch {
		b := &collect.Batch{Host: "h"}
		err := s.Collect(context.Background(), b)
		t.Logf("collection: %d records, %v", len(b.Records), err)
		if err != nil && !errors.Is(err, phc.ErrNotAdvancing) {
			t.Fatal(err)
		}
		time.Sleep(interval)
		return b
	}
	collect()
	collect()
	for _, by := range []int64{37e9, -100e6} {
		set(by)
		b := collect()
		steps := records(b, "phc_step")
		if len(steps) != 1 {
			t.Fatalf("set by %d ns: %d phc_step records", by, len(steps))
		}
		r := steps[0]
		t.Logf("set by %d ns: phc_step %v", by, r.Fields)
		field := func(k string) int64 { f, _ := r.Field(k); return f.I }
		step, bound, elapsed := field("step_ns"), field("bound_ns"), field("interval_ns")
		own := field("phc_after_ns") - field("phc_before_ns") - by // what the PHC ran on its own
		if own < -bound || own > elapsed+bound || step != field("phc_after_ns")-field("phc_before_ns")-field("predicted_ns") ||
			max(step, -step) <= bound || step < by-elapsed-bound || step > by+bound {
			t.Errorf("set by %d ns: step %d ns, bound %d ns, interval %d ns, the PHC ran %d ns on its own", by, step, bound, elapsed, own)
		}
		if _, err := tr.Move(timebase.Timestamp{NS: field("phc_after_ns"), Domain: s.domain}, timebase.DomainRealtime); err == nil {
			t.Errorf("set by %d ns: a model still moves the PHC's stamps", by)
		}
	}
	if n := phcCounter(s, "steps"); n != 2 {
		t.Errorf("steps %d, want 2", n)
	}
}
