package judging

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
)

// stepClocks is a virtual CLOCK_MONOTONIC and a REALTIME over it that a
// test steps.
type stepClocks struct{ mono, off int64 }

func (v *stepClocks) read() judge.Instant {
	return judge.Instant{RealNS: v.mono + v.off, MonoNS: v.mono}
}

// judgedOnVirtualClocks is the agent's judging on virtual clocks with one
// clock judged by c, stale after 3 s as pps.judge.
func judgedOnVirtualClocks(t *testing.T, c Config) (*Judges, *Judgement, *stepClocks) {
	t.Helper()
	v := &stepClocks{mono: 1e9, off: 1_700_000_000e9 - 1e9}
	g := &Judges{log: slog.New(slog.DiscardHandler), recordSteps: true}
	g.set.Timeline = judge.NewTimeline(v.read)
	c.Enabled = true
	m, err := g.Add("system", "pps:test", c, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return g, m, v
}

// ticks runs the agent's side for d: a PPS edge each steady second stamped
// in REALTIME and read 100 ms later (as source_pps does), the judge tick
// every 200 ms; it returns the records.
func ticks(g *Judges, m *Judgement, v *stepClocks, d time.Duration, edges bool) []record.Record {
	b := &collect.Batch{Host: "h"}
	var pending [][2]int64
	for end := v.mono + int64(d); v.mono < end; {
		next := v.mono + int64(Tick)
		if p := next - next%1e9; edges && p > v.mono {
			pending = append(pending, [2]int64{p, p + v.off})
		}
		v.mono = next
		for len(pending) > 0 && pending[0][0]+1e8 <= v.mono {
			e := pending[0][1]
			pending = pending[1:]
			off := (e%1e9+1.5e9)%1e9 - 0.5e9
			m.Observe(b, judge.Sample{TimeNS: e, Synced: true, OffsetNS: off, BoundNS: judge.Sum(judge.Abs(off), 20_000), FreqErrPPB: -1})
		}
		g.Advance(b, g.set.Time().Now())
	}
	return b.Records
}

func measurements(recs []record.Record, name string) []record.Record {
	var out []record.Record
	for _, r := range recs {
		if r.Measurement == name {
			out = append(out, r)
		}
	}
	return out
}

// A REALTIME step of −1 h, +1 h or +10 s while PPS edges judge the system
// clock changes no state: no sync_state record; the step is one clock_step
// record with its size (the judge's own when no clock source records
// REALTIME's steps).
func TestJudgingRealtimeStepChangesNoState(t *testing.T) {
	for _, step := range []time.Duration{-time.Hour, time.Hour, 10 * time.Second} {
		t.Run(step.String(), func(t *testing.T) {
			g, m, v := judgedOnVirtualClocks(t, Config{Threshold: 100 * time.Microsecond, Holdover: time.Minute, MinSamples: 4})
			recs := ticks(g, m, v, 10*time.Second, true)
			if s := measurements(recs, "sync_state"); len(s) != 1 {
				t.Fatalf("before the step: %d sync_state records, want 1 (LOCKED)", len(s))
			}
			v.off += int64(step)
			recs = ticks(g, m, v, 30*time.Second, true)
			if s := measurements(recs, "sync_state"); len(s) != 0 {
				to, _ := s[0].Field("to")
				t.Errorf("a %v step: %d sync_state records (first to %s)", step, len(s), to.S)
			}
			cs := measurements(recs, "clock_step")
			if len(cs) != 1 {
				t.Fatalf("%d clock_step records, want 1", len(cs))
			}
			if f, _ := cs[0].Field("step_ns"); f.I != int64(step) {
				t.Errorf("clock_step step_ns %d, want %d", f.I, int64(step))
			}
			st := g.Status(v.mono + v.off)
			if st.Clocks[0].State != "LOCKED" {
				t.Errorf("/status says %s", st.Clocks[0].State)
			}
		})
	}
}

// The agent's judge has a hysteresis margin (lockMargin): a bound
// alternating 0.999 / 1.001 ms against a 1 ms threshold makes at most 2
// sync_state records in 100 samples (before: 100).
func TestJudgingHysteresis(t *testing.T) {
	g, m, v := judgedOnVirtualClocks(t, Config{Threshold: time.Millisecond, Holdover: 5 * time.Minute, MinSamples: 1})
	b := &collect.Batch{Host: "h"}
	m.Observe(b, judge.Sample{TimeNS: v.mono + v.off, Synced: true, BoundNS: 500_000}) // LOCKED
	for i := range 100 {
		v.mono += 1e9
		bound := int64(999_000 + 2_000*(i%2))
		m.Observe(b, judge.Sample{TimeNS: v.mono + v.off, Synced: true, OffsetNS: 100, BoundNS: bound})
		g.Advance(b, g.set.Time().Now())
	}
	if n := len(measurements(b.Records, "sync_state")); n > 3 { // the first LOCKED, then at most 2
		t.Errorf("%d sync_state records for 100 samples wavering about the threshold", n-1)
	}
}

// A daemon reporting 0 frequency error (chronyd on its local reference
// reports a skew of 0) still has its bound grow in HOLDOVER, at 5 ppm
// (minDriftPPB).
func TestJudgingHoldoverGrowsWithZeroFrequencyError(t *testing.T) {
	g, m, v := judgedOnVirtualClocks(t, Config{Threshold: time.Millisecond, Holdover: 5 * time.Minute, MinSamples: 1})
	b := &collect.Batch{Host: "h"}
	m.Observe(b, judge.Sample{TimeNS: v.mono + v.off, Synced: true, BoundNS: 0, FreqErrPPB: 0})
	v.mono += 1e9
	m.Missed(b, v.mono+v.off)
	v.mono += 100e9
	st := g.Status(v.mono + v.off)
	if c := st.Clocks[0]; c.State != "HOLDOVER" || c.ErrorBoundNS != 101*5000 {
		t.Errorf("100 s into HOLDOVER: %s, bound %d ns; want HOLDOVER, %d ns", c.State, c.ErrorBoundNS, 101*5000)
	}
}

// /status events_lost (the LOST column) is the samples missed and what the
// source counts lost; it was always 0.
func TestJudgingEventsLost(t *testing.T) {
	g, m, v := judgedOnVirtualClocks(t, Config{Threshold: time.Millisecond, Holdover: 5 * time.Minute, MinSamples: 1})
	var kernel uint64 = 7
	m.CountLost(func() uint64 { return kernel })
	b := &collect.Batch{Host: "h"}
	for range 3 {
		v.mono += 1e9
		m.Missed(b, v.mono+v.off)
	}
	st := g.Status(v.mono + v.off)
	if got := st.Clocks[0].EventsLost; got != 10 {
		t.Errorf("events_lost %d, want 3 missed + 7 lost by the source", got)
	}
	g.Records(b, v.mono+v.off)
	cs := measurements(b.Records, "clock_state")
	if f, _ := cs[0].Field("events_lost"); len(cs) != 1 || f.U != 10 {
		t.Errorf("clock_state events_lost %v", fmt.Sprint(f))
	}
}
