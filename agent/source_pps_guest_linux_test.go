package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/judge"
)

// ktimerPPS returns the device of the kernel's pps-ktimer client (a PPS
// source driven by a kernel timer, one assert edge a second), which the QEMU
// rig's amd64 guest loads; it skips elsewhere.
func ktimerPPS(t *testing.T) string {
	t.Helper()
	names, _ := filepath.Glob("/sys/class/pps/pps*/name")
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil && strings.TrimSpace(string(b)) == "ktimer" {
			return "/dev/" + filepath.Base(filepath.Dir(n))
		}
	}
	t.Skip("no pps-ktimer device here (the rig's amd64 guest loads one)")
	return ""
}

// ktimerJudged runs the PPS source on the pps-ktimer device at path, judged
// in g with a threshold of a second: any edge's bound (its distance to the
// nearest second, ≤ 0.5 s, and the latency) is within it less its margin,
// so LOCKED at the fourth edge whatever second the timer keeps, at its
// offset from the kernel's stamp.
func ktimerJudged(t *testing.T, path string, g *judging.Judges) (*ppsSource, *collect.EventSource[ppsEdge], PPSConfig) {
	t.Helper()
	dc := entryDefaults[PPSDeviceConfig]()
	dc.Device = path
	d := newPPSSource(dc, path, nil)
	pc := Default().PPS
	pc.Judge = JudgeConfig{Enabled: true, Threshold: time.Second, Holdover: time.Minute, MinSamples: 4}
	if err := d.judge(g, pc); err != nil {
		t.Fatal(err)
	}
	s, err := collect.Decode("pps:ktimer", time.Second, 64, d)
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, s)
	return d, s, pc
}

// TestPPSSourceOnKtimer runs the agent's PPS source on a real kernel's PPS
// device (pps-ktimer in the QEMU rig's amd64 guest): PPS_GETPARAMS,
// PPS_SETPARAMS and PPS_FETCH against the kernel's own structures, one
// assert edge a second with consecutive sequence numbers, none lost, each
// shipped at its kernel stamp.
func TestPPSSourceOnKtimer(t *testing.T) {
	path := ktimerPPS(t)
	d, s, pc := ktimerJudged(t, path, judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)}))
	time.Sleep(4500 * time.Millisecond)
	b := &collect.Batch{Host: "guest"}
	if err := s.Collect(context.Background(), b); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	checkRecordRules(t, b.Records)
	var seqs []uint64
	var times []int64
	var locked []int64
	for _, r := range b.Records {
		if r.Measurement == "sync_state" {
			locked = append(locked, r.TimeNS)
		}
		if r.Measurement != "pps_event" {
			continue
		}
		seq, _ := r.Field("sequence")
		k, _ := r.Field("kernel_ns")
		if r.TimeNS != k.I {
			t.Errorf("record at %d, kernel stamp %d: want the record at its stamp", r.TimeNS, k.I)
		}
		seqs, times = append(seqs, seq.U), append(times, r.TimeNS)
	}
	t.Logf("%d assert edges from %s: sequences %v", len(seqs), path, seqs)
	if len(seqs) < 3 {
		t.Fatalf("%d edges in 4.5 s, want at least 3 (one a second)", len(seqs))
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Errorf("sequence %d follows %d", seqs[i], seqs[i-1])
		}
		if dt := time.Duration(times[i] - times[i-1]); dt < 800*time.Millisecond || dt > 1200*time.Millisecond {
			t.Errorf("edges %d and %d are %v apart, want a second", seqs[i-1], seqs[i], dt)
		}
	}
	v := d.judged.Judged().View(times[len(times)-1])
	last := times[len(times)-1]
	off := (last%1e9+1.5e9)%1e9 - 0.5e9
	t.Logf("judged: %s, offset %d ns, bound %d ns, transitions at %v", v.State, v.OffsetNS, v.BoundNS, locked)
	if v.OffsetNS != off || v.BoundNS != judge.Abs(off)+int64(pc.Latency) || (len(times) >= 4 && (v.State != judge.Locked || len(locked) != 1 || locked[0] != times[3])) {
		t.Errorf("judged %s at offset %d ns, bound %d ns, transitions at %v; want LOCKED at the fourth edge (%v), offset %d ns", v.State, v.OffsetNS, v.BoundNS, locked, times, off)
	}
	if lost := collecttest.Self(t, s, "assert_lost"); lost.U != 0 {
		t.Errorf("assert_lost %d, want 0", lost.U)
	}
}
