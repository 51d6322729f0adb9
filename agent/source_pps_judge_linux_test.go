package agent

import (
	"log/slog"
	"testing"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/judge"
)

// The system clock judged against a PPS that marks UTC seconds (pps.judge):
// each assert edge's offset is its stamp's distance to the nearest second,
// its bound that plus pps.latency. Edges 30 us late and 40 us early lock it
// after min_samples; an edge 300 us late is FREERUN (offset beyond the
// threshold, whatever the latency); a sync_state record comes at the edge
// that caused each transition. Clear edges are not judged.
func TestPPSJudgeTakesEdgesForSeconds(t *testing.T) {
	c := Default()
	c.PPS.Judge.Enabled = true
	f := newPPSFixture(t, true, true, gpio.PPSEvent{AssertNS: sec - 1e9, AssertSeq: 10, ClearNS: sec - 9e8, ClearSeq: 10})
	if err := f.d.judge(judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)}), c.PPS); err != nil {
		t.Fatal(err)
	}
	lat := int64(c.PPS.Latency)
	offs := []int64{30_000, -40_000, 30_000, -40_000}
	var evs []gpio.PPSEvent
	for i, off := range offs {
		n := int64(i + 1)
		evs = append(evs, gpio.PPSEvent{AssertNS: sec + n*1e9 + off, AssertSeq: uint32(10 + n), ClearNS: sec - 9e8, ClearSeq: 10})
	}
	// A clear edge 450 ms into the second, which is no second's start.
	evs = append(evs, gpio.PPSEvent{AssertNS: evs[3].AssertNS, AssertSeq: 14, ClearNS: sec + 4e9 + 450e6, ClearSeq: 11})
	f.fetch(len(evs), evs...)
	recs := collectAll(t, f.s)
	var states []string
	for _, r := range recs {
		if r.Measurement == "sync_state" {
			to, _ := r.Field("to")
			states = append(states, to.S)
			if want := evs[3].AssertNS; r.TimeNS != want {
				t.Errorf("LOCKED at %d, want the fourth edge's %d", r.TimeNS, want)
			}
		}
	}
	v := f.d.judged.Judged().View(sec + 4e9)
	if len(states) != 1 || states[0] != "LOCKED" || v.OffsetNS != offs[3] || v.BoundNS != judge.Abs(offs[3])+lat {
		t.Fatalf("transitions %v, offset %d ns, bound %d ns; want LOCKED, %d ns, %d ns", states, v.OffsetNS, v.BoundNS, offs[3], judge.Abs(offs[3])+lat)
	}
	f.fetch(1, gpio.PPSEvent{AssertNS: sec + 5e9 + 300_000, AssertSeq: 15, ClearNS: sec + 4e9 + 450e6, ClearSeq: 11})
	collectAll(t, f.s)
	if v := f.d.judged.Judged().View(sec + 5e9 + 300_000); v.State != judge.Freerun || v.OffsetNS != 300_000 {
		t.Errorf("an edge 300 us late: %s, offset %d ns", v.State, v.OffsetNS)
	}
}

// The offset of an edge is taken to the nearest second on either side.
func TestPPSJudgeOffsetIsToTheNearestSecond(t *testing.T) {
	c := Default()
	c.PPS.Judge = JudgeConfig{Enabled: true, Threshold: 1e9, Holdover: 1e9, MinSamples: 1}
	for _, tc := range []struct{ frac, want int64 }{{0, 0}, {1, 1}, {499_999_999, 499_999_999}, {500_000_000, -500_000_000}, {999_999_999, -1}} {
		f := newPPSFixture(t, true, false, gpio.PPSEvent{AssertNS: sec - 1e9, AssertSeq: 10})
		if err := f.d.judge(judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)}), c.PPS); err != nil {
			t.Fatal(err)
		}
		f.fetch(1, gpio.PPSEvent{AssertNS: sec + tc.frac, AssertSeq: 11})
		collectAll(t, f.s)
		if v := f.d.judged.Judged().View(sec + tc.frac); v.OffsetNS != tc.want {
			t.Errorf("an edge %d ns into a second: offset %d ns, want %d", tc.frac, v.OffsetNS, tc.want)
		}
	}
}
