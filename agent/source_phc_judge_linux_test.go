package agent

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/phc/phctest"
	"github.com/monagent/monagent/timebase"
)

// phcJudgeRig is a scripted machine's PHC measured with phc.judge on: the
// PHC keeps TAI (TAI−UTC 37 s) set off REALTIME by offNS, and the judged
// system clock's truth is REALTIME − (PHC − 37 s) at every reading.
type phcJudgeRig struct {
	p   *phctest.Machine
	s   *phcSource
	env *Env
}

func newPHCJudgeRig(t *testing.T, offNS int64, edit func(c *Config)) *phcJudgeRig {
	t.Helper()
	c := Default()
	c.PHC.Judge.Enabled, c.PHC.TAIUTC = true, 37
	if edit != nil {
		edit(&c)
	}
	if err := validate(&c.PHC); err != nil {
		t.Fatal(err)
	}
	p := phctest.New()
	p.RatePPB = 0
	p.PHCNS = p.Now(timebase.DomainRealtime) + 37e9 - offNS
	env := &Env{Config: &c, judges: judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)})}
	s := scriptedPHCSource(p, c.PHC, timebase.NewTranslators())
	if err := s.judge(env); err != nil {
		t.Fatal(err)
	}
	return &phcJudgeRig{p: p, s: s, env: env}
}

// collect runs one collection a phc.interval on and returns the judged
// clock as it is after it, with the truth at its reading.
func (r *phcJudgeRig) collect(t *testing.T) (judge.View, int64) {
	t.Helper()
	r.p.Advance(int64(time.Second))
	utc := r.p.PHCNS
	if r.env.Config.PHC.Timescale == "tai" {
		utc -= 37e9
	}
	truth := r.p.Now(timebase.DomainRealtime) - utc
	if err := r.s.Collect(context.Background(), &collect.Batch{Host: "h"}); err != nil && !errors.Is(err, phc.ErrNotAdvancing) {
		t.Fatal(err)
	}
	v := r.s.judged.Judged().View(r.p.Now(timebase.DomainRealtime))
	return v, truth
}

// The system clock judged against a PHC (phc.judge): the offset is REALTIME
// less the PHC's UTC time (on TAI, less TAI−UTC), the bound the read
// window's, which covers the truth; LOCKED after min_samples within the
// threshold, FREERUN when the offset passes it (a PHC on TAI taken for UTC
// is 37 s off), not LOCKED on a stopped PHC or with TAI−UTC unknown.
func TestPHCJudgeOnTAI(t *testing.T) {
	for _, tc := range []struct {
		name  string
		offNS int64
		edit  func(c *Config)
		stop  bool
		want  judge.State
	}{
		{name: "30 us off", offNS: 30_000, want: judge.Locked},
		{name: "-80 us off", offNS: -80_000, want: judge.Locked},
		{name: "300 us off", offNS: 300_000, want: judge.Freerun},
		{name: "on UTC", offNS: 37e9 + 20_000, edit: func(c *Config) { c.PHC.Timescale = "utc" }, want: judge.Locked},
		{name: "on TAI, taken for UTC", offNS: 20_000, edit: func(c *Config) { c.PHC.Timescale = "utc" }, want: judge.Freerun},
		{name: "TAI-UTC unknown", offNS: 30_000, edit: func(c *Config) { c.PHC.TAIUTC = 0 }, want: judge.Freerun},
		{name: "stopped PHC", offNS: 30_000, stop: true, want: judge.Freerun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPHCJudgeRig(t, tc.offNS, tc.edit)
			if tc.edit != nil && r.env.Config.PHC.TAIUTC == 0 {
				r.s.taiUTC = func() (int64, error) { return 0, nil } // a kernel whose TAI offset was never set
			}
			if tc.stop {
				r.p.RatePPB = -1e9
			}
			var v judge.View
			for i := range 5 {
				var truth int64
				v, truth = r.collect(t)
				if tc.want == judge.Locked && (v.OffsetNS != truth || v.BoundNS < judge.Abs(truth)) {
					t.Errorf("reading %d: offset %d ns, bound %d ns; truth %d ns", i, v.OffsetNS, v.BoundNS, truth)
				}
			}
			if v.State != tc.want {
				t.Errorf("state %s (offset %d ns, bound %d ns), want %s", v.State, v.OffsetNS, v.BoundNS, tc.want)
			}
		})
	}
}

// phc.through: ptp4l composes the PHC's bound with the ptp4l monitor's
// judged clock (system ← PHC ← grandmaster): LOCKED only while ptp4l's is,
// the bound the sum of both.
func TestPHCJudgeThroughPtp4l(t *testing.T) {
	r := newPHCJudgeRig(t, 10_000, func(c *Config) {
		c.PTP.Enabled, c.PTP.Ptp4l.First().Enabled, c.PHC.Through = true, true, "ptp4l"
	})
	if got := r.s.judged.Judged().Source(); got != "ptp4l+phc:/dev/ptp3" {
		t.Fatalf("source %q", got)
	}
	up, err := r.env.judges.Add("ptp4l", "ptp4l:"+r.env.Config.PTP.Ptp4l.First().Socket, r.env.Config.PTP.Ptp4l.First().Judge, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	feed := func(bound int64, synced bool) {
		now := r.p.Now(timebase.DomainRealtime)
		up.Judged().Observe(judge.Sample{TimeNS: now, Synced: synced, OffsetNS: 100, BoundNS: bound, FreqErrPPB: 0})
	}
	for range 3 {
		feed(40_000, true)
		v, _ := r.collect(t)
		if v.BoundNS < 50_000 {
			t.Errorf("bound %d ns: less than the PHC's 10 us and ptp4l's 40 us", v.BoundNS)
		}
	}
	if v, _ := r.collect(t); v.State != judge.Locked {
		t.Fatalf("state %s with ptp4l LOCKED", v.State)
	}
	for range 2 {
		feed(0, false) // ptp4l lost its master
	}
	if v, _ := r.collect(t); v.State == judge.Locked {
		t.Errorf("still LOCKED with ptp4l %s", up.Judged().View(r.p.Now(timebase.DomainRealtime)).State)
	}

	c := Default()
	c.PHC.Judge.Enabled, c.PHC.Through = true, "ptp4l"
	s := scriptedPHCSource(phctest.New(), c.PHC, timebase.NewTranslators())
	if err := s.judge(&Env{Config: &c, judges: judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)})}); err == nil {
		t.Error("phc.through: ptp4l accepted with the ptp4l monitor off")
	}
}

// config check warns when a PHC on TAI would be judged on a kernel with no
// TAI−UTC, and not once phc.tai_utc gives it.
func TestPHCJudgeAdvisesTAIUTC(t *testing.T) {
	if k, err := timebase.ReadKernelState(); err != nil || k.TAIOffsetS != 0 {
		t.Skipf("this kernel's TAI-UTC is set (%d s, %v): nothing to advise", k.TAIOffsetS, err)
	}
	c := Default().PHC
	c.Judge.Enabled = true
	var p problems
	c.advise(&p)
	if len(p.Problems) != 1 || p.Problems[0].Key != "phc.tai_utc" {
		t.Errorf("advice %v, want one at phc.tai_utc", p.Problems)
	}
	c.TAIUTC = 37
	p = problems{}
	if c.advise(&p); len(p.Problems) != 0 {
		t.Errorf("advice with tai_utc set: %v", p.Problems)
	}
}
