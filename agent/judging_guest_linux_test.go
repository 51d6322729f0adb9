package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/record"
)

// TestJudgeRealtimeStepOnKtimer steps CLOCK_REALTIME of a real kernel with
// clock_settime by −1 h, +1 h and +10 s while the agent judges the system
// clock by pps-ktimer's PPS (the QEMU rig's guests, whose clock is their
// own): no state changes (the one sync_state is the first LOCKED), and each
// step is a clock_step record of its size. Before the judge measured on
// CLOCK_MONOTONIC, each step sent the clock out of LOCKED (stale by REALTIME).
// It never runs on a host: it needs the guest's MONAGENT_GUEST_STEP_CLOCK.
func TestJudgeRealtimeStepOnKtimer(t *testing.T) {
	if os.Getenv("MONAGENT_GUEST_STEP_CLOCK") == "" {
		t.Skip("steps CLOCK_REALTIME: runs only in the QEMU rig's guests (MONAGENT_GUEST_STEP_CLOCK)")
	}
	g := judging.New(judging.Options{Log: slog.New(slog.DiscardHandler), RecordSteps: true})
	_, s, _ := ktimerJudged(t, ktimerPPS(t), g)
	var recs []record.Record
	judgeFor := func(dur time.Duration) {
		for end := time.Now().Add(dur); time.Now().Before(end); { // the monotonic reading: steps do not move it
			time.Sleep(judging.Tick)
			b := &collect.Batch{Host: "guest"}
			if err := s.Collect(context.Background(), b); err != nil && !errors.Is(err, collect.ErrNoData) {
				t.Fatalf("Collect: %v", err)
			}
			g.Advance(b, g.Set().Time().Now())
			recs = append(recs, b.Records...)
		}
	}
	judgeFor(6 * time.Second)
	if v := g.Clocks()[0].Judged().View(time.Now().UnixNano()); v.State.String() != "LOCKED" {
		t.Fatalf("not LOCKED after 6 s of edges: %s", v.State)
	}
	steps := []time.Duration{-time.Hour, time.Hour, 10 * time.Second}
	for _, step := range steps {
		ts := unix.NsecToTimespec(time.Now().Add(step).UnixNano())
		if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
			t.Fatalf("clock_settime: %v", err)
		}
		judgeFor(6 * time.Second) // twice the 3 s a quiet source has before it counts as stale
	}
	var states []string
	var got []int64
	for _, r := range recs {
		switch r.Measurement {
		case "sync_state":
			to, _ := r.Field("to")
			states = append(states, to.S)
		case "clock_step":
			f, _ := r.Field("step_ns")
			got = append(got, f.I)
		}
	}
	v := g.Clocks()[0].Judged().View(time.Now().UnixNano())
	t.Logf("transitions %v; clock_step records %v; now %s, bound %d ns", states, got, v.State, v.BoundNS)
	if len(states) != 1 || states[0] != "LOCKED" || v.State.String() != "LOCKED" {
		t.Errorf("transitions %v, now %s: want LOCKED once and kept through the steps", states, v.State)
	}
	if len(got) != len(steps) {
		t.Fatalf("clock_step records %v, want %d", got, len(steps))
	}
	for i, step := range steps {
		// clock_settime sets the time read just before it plus the step:
		// the step seen is short by what passed between the two.
		if diff := int64(step) - got[i]; diff < 0 || diff > int64(50*time.Millisecond) {
			t.Errorf("step %d: clock_step %d ns, want %d ns (less at most 50 ms)", i, got[i], int64(step))
		}
	}
	if lost := collecttest.Self(t, s, "assert_lost"); lost.U != 0 {
		t.Errorf("assert_lost %d, want 0", lost.U)
	}
}
