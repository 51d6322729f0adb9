package judging

import (
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/status"
	"github.com/monagent/monagent/vote"
)

// crossCheck is the vote across the judged references of one clock (issue
// 35, package vote): "system" gathers the probe's NTP servers, chronyd,
// ntpd, the PHCs (ptp4l's grandmaster through one with phc.through), the
// PPS devices, the GNSS receivers (added as gpsd names them) and the PTP
// probe, each a judged clock of the same clock name. It votes at each sample
// of any of its references (0 allocations once its buffers are sized) and
// at each judge tick (a reference gone quiet stops voting), and keeps the
// latest Result for /status and /metrics.
type crossCheck struct {
	// clock names the clock voted on (VoteClock): its judged clocks'
	// clock name.
	clock string
	owner *Judges

	mu      sync.Mutex
	members []*Judgement
	// thresholdNS is the clock's threshold: the smallest of its
	// references' (the strictest any of them is judged by), so that a
	// combined LOCKED is never looser than a reference's own.
	thresholdNS int64
	voter       *vote.Voter
	refs        []vote.Ref
	res         vote.Result
	voted       bool
	votedNS     int64 // the last vote's now (REALTIME)
}

// VoteClock is the clock whose vote the judged clock (clock, source) is
// in: its clock name, but for "ptp4l", the clock each ptp4l instance
// disciplines (its own PHC, judged against its own grandmaster), named by
// the instance's source (ptp4l:<socket>): the instances of a boundary clock
// or a dual-NIC board discipline different clocks, which must never vote
// together. (With software timestamping ptp4l disciplines the system
// clock: its source joins "system" through judging.addVoting.)
func VoteClock(clock, source string) string {
	if clock == "ptp4l" {
		return source
	}
	return clock
}

// join adds m to the vote of clock (VoteClock), made at its first
// reference.
func (g *Judges) join(clock string, m *Judgement, thresholdNS int64) {
	g.mu.Lock()
	var c *crossCheck
	for _, x := range g.checks {
		if x.clock == clock {
			c = x
		}
	}
	if c == nil {
		v, err := vote.New(vote.Default())
		if err != nil {
			panic(err) // vote.Default() is valid
		}
		c = &crossCheck{clock: clock, owner: g, voter: v, thresholdNS: math.MaxInt64}
		g.checks = append(g.checks, c)
	}
	g.mu.Unlock()
	c.mu.Lock()
	c.members = append(c.members, m)
	c.thresholdNS = min(c.thresholdNS, thresholdNS)
	c.mu.Unlock()
	m.check = c
}

// size is how many references the clock has.
func (c *crossCheck) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.members)
}

func (g *Judges) crossChecks() []*crossCheck {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.checks
}

// vote votes across the clock's references at now (an instant of both
// clocks: the sample's or the tick's); each reference whose verdict changed
// becomes a reference_check record in b, a log line and a notification.
func (c *crossCheck) vote(b Adder, now judge.Instant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs = c.refs[:0]
	for _, m := range c.members {
		c.refs = append(c.refs, vote.FromView(m.j.ViewAt(now)))
	}
	c.voter.Vote(now.RealNS, c.refs, &c.res)
	c.voted, c.votedNS = true, now.RealNS
	c.publish()
	for i := range c.res.Refs {
		if o := &c.res.Refs[i]; o.Changed {
			c.changed(b, c.members[i], &c.refs[i], o)
		}
	}
}

// publish publishes the vote to the time API at once (under c.mu, so in
// the order of the votes): an application never reads an interval a
// later vote contradicts for longer than the write takes.
func (c *crossCheck) publish() {
	switch c.clock {
	case sectionSystem:
		c.owner.pub.publishSystem(c.state(), &c.res, c.refs, c.thresholdNS)
	case "hca":
		c.owner.pub.publishGlobal(c.state())
	}
}

// changed records, logs and sends the change of m's verdict (o), dated by
// the sample that changed it, at least 1 ns after m's previous one.
func (c *crossCheck) changed(b Adder, m *Judgement, ref *vote.Ref, o *vote.Outcome) {
	t := max(o.ChangedNS, m.lastCheck+1)
	m.lastCheck = t
	from := m.verdict
	m.verdict = o.Verdict
	r := &c.res
	cb := int64(-1)
	if r.Valid {
		cb = r.BoundNS
	}
	rc := status.ReferenceCheck{Clock: m.j.Clock(), Source: ref.Source, From: from.String(), To: o.Verdict.String(), Vote: r.Status.String(),
		OffsetNS: ref.OffsetNS, BoundNS: ref.BoundNS, CombinedOffsetNS: r.OffsetNS, CombinedBoundNS: cb,
		References: r.References, Voting: r.Voting, Agreeing: r.Agreeing, TimeNS: t}
	b.Add("reference_check", t, m.tags, record.String("from", rc.From), record.String("to", rc.To), record.String("vote", rc.Vote),
		record.Int("offset_ns", rc.OffsetNS), record.Int("bound_ns", rc.BoundNS),
		record.Int("combined_offset_ns", rc.CombinedOffsetNS), record.Int("combined_bound_ns", rc.CombinedBoundNS),
		record.Int("references", int64(rc.References)), record.Int("voting", int64(rc.Voting)), record.Int("agreeing", int64(rc.Agreeing)))
	g := c.owner
	level := slog.LevelInfo
	if o.Verdict == vote.Falseticker || o.Verdict == vote.Contested {
		level = slog.LevelWarn
	}
	g.log.Log(nil, level, "reference "+rc.To, "clock", rc.Clock, "source", rc.Source, "from", rc.From, "vote", rc.Vote,
		"offset_ns", rc.OffsetNS, "bound_ns", rc.BoundNS, "combined_bound_ns", cb, "at", time.Unix(0, t).UTC())
	if g.notify != nil {
		g.notify.Send(status.ReferenceCheckEvent(g.host, g.seq.Add(1), rc))
	}
}

// combined is the clock's entry in /status, and each reference's verdict
// (agrees: true, false or nil) by source.
func (c *crossCheck) combined(agrees map[[2]string]*bool) status.Combined {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.res
	out := status.Combined{Clock: c.clock, State: judge.Unknown.String(), Vote: r.Status.String(), ErrorBoundNS: -1, ThresholdNS: c.thresholdNS,
		References: len(c.members), Voting: r.Voting, Agreeing: r.Agreeing, Falsetickers: []string{}, Absent: []string{}}
	if !c.voted {
		out.Vote = vote.None.String()
		return out
	}
	out.VotedNS = c.votedNS
	if r.Valid {
		out.OffsetNS, out.ErrorBoundNS, out.HalfWidthNS = r.OffsetNS, r.BoundNS, r.HalfWidthNS
	}
	out.State = c.state().String()
	out.Falsetickers = append(out.Falsetickers, r.Named...)
	for i := range r.Refs {
		o := &r.Refs[i]
		var a *bool
		switch o.Verdict {
		case vote.Absent:
			out.Absent = append(out.Absent, o.Source)
		case vote.Agrees:
			a = new(bool)
			*a = true
		case vote.Falseticker, vote.Contested:
			a = new(bool)
		}
		agrees[[2]string{c.members[i].j.Clock(), o.Source}] = a
	}
	return out
}

// state is the combined state of the last vote (doc: status.Combined).
func (c *crossCheck) state() judge.State {
	r := &c.res
	switch r.Status {
	case vote.Single:
		for i := range r.Refs {
			if r.Refs[i].Voting {
				return c.refs[i].State
			}
		}
	case vote.Agreed:
		if r.BoundNS > c.thresholdNS {
			return judge.Freerun
		}
		st := judge.Freerun // a majority of outliers (vote.Ref.Outlier) only
		for i := range r.Refs {
			switch {
			case !r.Refs[i].InMajority:
			case c.refs[i].State == judge.Locked:
				return judge.Locked
			case c.refs[i].State == judge.Holdover:
				st = judge.Holdover
			}
		}
		return st
	case vote.None:
		for i := range c.refs {
			if c.refs[i].State != judge.Unknown {
				return judge.Freerun
			}
		}
		return judge.Unknown // no reference has had a sample yet
	}
	return judge.Freerun
}
