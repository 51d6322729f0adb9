package judging

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/faultlog"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/notify"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/status"
	"github.com/monagent/monagent/vote"
)

// Config is a source's judge: subsection: how the clock it measures is
// judged (docs/configuration.md gives each source's defaults and why).
type Config struct {
	Enabled    bool          `yaml:"enabled"`
	Threshold  time.Duration `yaml:"threshold"`   // LOCKED needs an error bound at most this
	Holdover   time.Duration `yaml:"holdover"`    // the longest HOLDOVER after the reference is lost
	MinSamples int           `yaml:"min_samples"` // consecutive good samples to become LOCKED
}

func (j *Config) Check(key string, p *conf.List) {
	if !j.Enabled {
		return
	}
	p.Positive(key+".threshold", j.Threshold)
	p.Positive(key+".holdover", j.Holdover)
	conf.AtLeast(p, key+".min_samples", j.MinSamples, 1, "")
}

// judgeConfig is the judge's configuration: the threshold, holdover and
// min_samples given, the hysteresis margin (lockMargin) and the drift floor
// (minDriftPPB), stale from the source.
func (j *Config) judgeConfig(stale time.Duration) judge.Config {
	return judge.Config{ThresholdNS: int64(j.Threshold), MarginNS: int64(j.Threshold) / lockMargin, HoldoverNS: int64(j.Holdover),
		MinSamples: j.MinSamples, StaleNS: int64(stale), MinDriftPPB: minDriftPPB}
}

// lockMargin: a clock becomes LOCKED only with bounds within the threshold
// less 1/lockMargin of it (10 %), and leaves LOCKED only with one over the
// threshold, so a bound wavering about the threshold does not flap (a bound
// alternating 0.999 / 1.001 ms against 1 ms made 100 transitions, and 100
// webhooks, in 100 samples).
const lockMargin = 10

// minDriftPPB is the least rate at which a bound grows once its reference
// is lost (HOLDOVER), whatever frequency error the source reports: 5 ppm.
// A source's frequency error (chronyd's skew, ntpd's wander, the drift of
// the offsets) is how well the frequency was known while the reference
// was there; without it the oscillator wanders with temperature, which the
// source no longer corrects. The boards' clocks are uncompensated crystals:
// an AT-cut crystal moves by up to ~0.5 ppm per °C away from its turning
// point, and a board in a cabinet sees several °C within the minutes a
// holdover lasts, so a few ppm. 5 ppm is five times chronyd's maxclockerror
// default (1 ppm, its figure for an ordinary crystal's short-term error) and
// a third of RFC 5905's PHI (15 ppm, the tolerance an NTP implementation
// assumes for a clock it knows nothing of). A chronyd on its local
// reference reports a skew of 0: its bound grows at this rate.
const minDriftPPB = 5000

// Judges is the agent's judged clocks: what /status and /metrics show, and
// where their transitions become sync_state records, log lines and
// notifications.
type Judges struct {
	set    judge.Set
	host   string
	log    *slog.Logger
	notify *notify.Sender // nil without webhooks
	seq    atomic.Uint64
	// hookNames name the receivers (index and host) and hookLogs log what
	// changes in their deliveries, each on its receiver's goroutine.
	hookNames []string
	hookLogs  []faultlog.Log
	// recordSteps: the judge records the REALTIME steps it sees, as no
	// clock source does (clock.enabled off, or realtime not in
	// clock.clocks).
	recordSteps bool
	// reference is what this agent is to others (status.Doc.Reference).
	reference string
	// pub publishes the votes to the time API (nil when timeapi is off).
	pub *Publisher

	mu     sync.Mutex
	list   []*Judgement
	checks []*crossCheck // the vote across each clock's references, in the order the clocks were first judged

	wakeOnce sync.Once
	wake     chan struct{} // wakeup
	ticks    atomic.Uint64 // the judge's wake-ups (serve), for tests
}

// Options are what the agent tells its judges.
type Options struct {
	Host string
	Log  *slog.Logger
	// RecordSteps: record the REALTIME steps the judge sees as clock_step
	// records (when no clock source records them).
	RecordSteps bool
	// Reference is what this agent is to others (status.Doc.Reference).
	Reference string
}

// New makes the agent's judges, with no judged clock yet.
func New(o Options) *Judges {
	return &Judges{host: o.Host, log: o.Log, recordSteps: o.RecordSteps, reference: o.Reference}
}

// Set is the judged clocks, for /metrics (status.Judged).
func (g *Judges) Set() *judge.Set { return &g.set }

// Publish makes the votes published to the time API by p (nil: none).
func (g *Judges) Publish(p *Publisher) { g.pub = p }

// Notifier is the webhooks' sender, nil without webhooks.
func (g *Judges) Notifier() *notify.Sender { return g.notify }

// Clocks are the judged clocks, in the order they were added.
func (g *Judges) Clocks() []*Judgement { return g.judged() }

// Judged is the judge of m's clock.
func (m *Judgement) Judged() *judge.Judged { return m.j }

// Judgement is one judged clock of a source. A nil Judgement (its judge is
// off) judges nothing.
type Judgement struct {
	j     *judge.Judged
	owner *Judges
	tags  []record.Tag
	mu    sync.Mutex
	last  int64 // the latest sync_state time: no two share one
	// lost is what the source lost before its samples reached the judge
	// (kernel losses, ring drops); nil when it counts none. Set before Run.
	lost func() uint64
	// check is the vote across the references of this clock; lastCheck
	// (the latest reference_check time) and verdict are under its lock.
	check     *crossCheck
	lastCheck int64
	verdict   vote.Verdict
}

// CountLost makes lost (the source's loss counters) part of what the
// judged clock shows as events_lost.
func (m *Judgement) CountLost(lost func() uint64) {
	if m != nil {
		m.lost = lost
	}
}

// eventsLost is what the judged clock did not get: the samples due that
// did not come (missed) and what the source lost on the way.
func (m *Judgement) eventsLost(v judge.View) uint64 {
	n := v.Missed
	if m.lost != nil {
		n += m.lost()
	}
	return n
}

// Add judges the clock a source measures; nil when cfg is off. stale is how
// long the source may go without a sample before its reference counts as
// lost (its interval and timeout, with a margin).
func (g *Judges) Add(clock, source string, cfg Config, stale time.Duration) (*Judgement, error) {
	return g.AddVoting(clock, VoteClock(clock, source), source, cfg, stale)
}

// AddVoting is Add with the clock whose vote the judged clock is in named
// (VoteClock's rule has an exception: a ptp4l with software timestamping
// disciplines the system clock, and votes there).
func (g *Judges) AddVoting(clock, voting, source string, cfg Config, stale time.Duration) (*Judgement, error) {
	if g == nil || !cfg.Enabled {
		return nil, nil
	}
	j, err := g.set.Add(clock, source, cfg.judgeConfig(stale))
	if err != nil {
		return nil, err
	}
	m := &Judgement{j: j, owner: g, tags: []record.Tag{{Key: "clock", Value: clock}, {Key: "source", Value: source}}}
	g.mu.Lock()
	g.list = append(g.list, m)
	g.mu.Unlock()
	g.join(voting, m, int64(cfg.Threshold))
	g.kick()
	return m, nil
}

// Adder takes records: a collect.Batch, or a source's own queue.
type Adder interface {
	Add(measurement string, timeNS int64, tags []record.Tag, fields ...record.Field)
}

// Observe judges a sample and votes across the references of its clock;
// its transitions and verdicts go into b.
func (m *Judgement) Observe(b Adder, s judge.Sample) {
	if m != nil {
		if s.MonoNS == 0 {
			s.MonoNS = m.owner.set.Time().At(s.TimeNS).MonoNS
		}
		ch := m.j.Observe(s)
		m.emit(b, ch.All())
		m.check.vote(b, judge.Instant{RealNS: s.TimeNS, MonoNS: s.MonoNS})
	}
}

// Missed says the sample due by deadline (REALTIME ns, placed on the
// judge's steady timeline) did not come.
func (m *Judgement) Missed(b Adder, deadline int64) {
	if m != nil {
		ch := m.j.Missed(deadline)
		m.emit(b, ch.All())
		m.check.vote(b, m.owner.set.Time().At(deadline))
	}
}

func (m *Judgement) emit(b Adder, trs []judge.Transition) {
	for _, tr := range trs {
		m.mu.Lock()
		t := max(tr.TimeNS, m.last+1)
		m.last = t
		m.mu.Unlock()
		b.Add("sync_state", t, m.tags, record.String("from", tr.From.String()), record.String("to", tr.To.String()),
			record.String("reason", string(tr.Reason)), record.Int("offset_ns", tr.OffsetNS), record.Int("bound_ns", tr.BoundNS))
		m.owner.transition(m, tr, t)
	}
}

// Webhooks makes the notifications' sender with build (nil: no webhooks),
// which is given where to tell the outcome of each delivery: each
// receiver's failures are logged when they start, change and end.
func (g *Judges) Webhooks(build func(observe func(receiver int, err error)) (*notify.Sender, error)) error {
	s, err := build(g.delivered)
	if err != nil || s == nil {
		return err
	}
	st := s.Stats()
	g.hookNames, g.hookLogs = nil, make([]faultlog.Log, len(st))
	for _, r := range st {
		g.hookNames = append(g.hookNames, notify.Name(r.Receiver, r.Host))
	}
	g.notify = s
	return nil
}

// delivered is told the outcome of each attempt to deliver to receiver i.
func (g *Judges) delivered(i int, err error) {
	g.hookLogs[i].Note(g.log, time.Now(), err, g.hookNames[i])
}

// transition logs a change of state and sends it to the webhooks.
func (g *Judges) transition(m *Judgement, tr judge.Transition, t int64) {
	g.kick()
	level := slog.LevelInfo
	if tr.To != judge.Locked {
		level = slog.LevelWarn
	}
	g.log.Log(nil, level, "clock "+tr.To.String(), "clock", m.j.Clock(), "source", m.j.Source(), "from", tr.From.String(),
		"reason", string(tr.Reason), "offset_ns", tr.OffsetNS, "bound_ns", tr.BoundNS, "at", time.Unix(0, t).UTC())
	if g.notify == nil {
		return
	}
	g.notify.Send(status.StateChangeEvent(g.host, g.seq.Add(1), m.j.Clock(), m.j.Source(), tr, t))
}

// Advance judges the passing of time up to now for every judged clock: a
// holdover that ended, a source gone quiet, each dated when it happened,
// all measured on the steady clock; then each clock's references vote. A step of REALTIME the timeline saw
// since the last call is logged, and recorded (clock_step, ref=monotonic)
// when no clock source records REALTIME's steps; it changes no state.
func (g *Judges) Advance(b *collect.Batch, now judge.Instant) {
	for _, m := range g.judged() {
		if tr, ok := m.j.AdvanceTo(now); ok {
			m.emit(b, []judge.Transition{tr})
			// A reference lost or out of holdover votes no more: the
			// change of its verdict is dated by the transition.
			m.check.vote(b, g.set.Time().At(tr.TimeNS))
		}
	}
	for _, c := range g.crossChecks() {
		c.vote(b, now)
	}
	if g.pub != nil && g.pub.rank0 {
		g.pub.publishGlobal(judge.Locked) // rank 0's global timeline is its own clock
	}
	steps, n := g.set.Time().Steps()
	for _, st := range steps {
		g.log.Warn("REALTIME stepped: the judge's durations are on CLOCK_MONOTONIC and no judged state changes", "step_ns", st.StepNS,
			"within_ns", st.IntervalNS, "at", time.Unix(0, st.AtNS).UTC())
		if g.recordSteps {
			b.Add("clock_step", st.AtNS, stepTags, record.Int("step_ns", st.StepNS), record.Int("offset_before_ns", st.BeforeNS),
				record.Int("offset_after_ns", st.AfterNS), record.Int("interval_ns", st.IntervalNS), record.Uint("steps", n))
		}
	}
}

// stepTags tag the judge's own clock_step records: REALTIME against the
// monotonic clock it measures durations on.
var stepTags = []record.Tag{{Key: "clock", Value: "realtime"}, {Key: "ref", Value: "monotonic"}}

// Records adds every judged clock's clock_state at now, and the webhooks'
// counters.
func (g *Judges) Records(b *collect.Batch, now int64) {
	for _, m := range g.judged() {
		v := m.j.View(now)
		b.Add("clock_state", now, m.tags, record.String("state", v.State.String()), record.Int("since_ns", v.SinceNS),
			record.Int("offset_ns", v.OffsetNS), record.Int("bound_ns", v.BoundNS), record.Int("last_sample_ns", v.LastSampleNS),
			record.Uint("state_changes", v.Changes), record.Uint("events_lost", m.eventsLost(v)))
	}
	if g.notify != nil {
		for _, st := range g.notify.Stats() {
			tags := []record.Tag{{Key: "receiver", Value: strconv.Itoa(st.Receiver)}, {Key: "receiver_host", Value: st.Host}}
			b.Add("monagent_notify", now, tags, record.Uint("queued", st.Queued), record.Uint("delivered", st.Delivered),
				record.Uint("retries", st.Retries), record.Uint("dropped", st.Dropped), record.String("last_error", st.LastError))
		}
	}
}

// Find is the judged clock of source, or nil.
func (g *Judges) Find(source string) *judge.Judged {
	for _, m := range g.judged() {
		if m.j.Source() == source {
			return m.j
		}
	}
	return nil
}

func (g *Judges) judged() []*Judgement {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.list
}

// Status is the /status document at now: every judged clock, with what
// it did not get (events_lost) and its verdict in the latest vote of its
// clock's references, and each clock's combined answer.
func (g *Judges) Status(now int64) status.Doc {
	list := g.judged()
	views, lost := make([]judge.View, len(list)), make([]uint64, len(list))
	for i, m := range list {
		views[i] = m.j.View(now)
		lost[i] = m.eventsLost(views[i])
	}
	checks := g.crossChecks()
	agrees := make(map[[2]string]*bool, len(list))
	combined := make([]status.Combined, 0, len(checks))
	for _, c := range checks {
		combined = append(combined, c.combined(agrees))
	}
	slices.SortFunc(combined, func(a, b status.Combined) int { return cmp.Compare(a.Clock, b.Clock) })
	clocks := status.FromViews(views)
	for i := range clocks {
		clocks[i].EventsLost = lost[i]
		clocks[i].Agrees = agrees[[2]string{clocks[i].Clock, clocks[i].Source}]
	}
	status.Sort(clocks)
	return status.Doc{Host: g.host, TimeNS: now, Clocks: clocks, Reference: g.reference, Combined: combined}
}

// Serve runs what the judged clocks are shown and sent through until ctx
// ends: the HTTP endpoint (srv, nil when off), the webhooks, and a tick that
// judges the passing of time, whose transitions go to enqueue.
func (g *Judges) Serve(ctx context.Context, srv *status.Server, host string, enqueue func([]record.Record)) {
	var wg sync.WaitGroup
	if srv != nil {
		wg.Go(func() {
			if err := srv.Serve(ctx); err != nil {
				g.log.Error("http endpoint stopped", "err", err)
			}
		})
	}
	if g.notify != nil {
		g.notify.Run(ctx)
	}
	t := time.NewTimer(g.nextTick(g.set.Time().Now()))
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-g.wakeup(): // a transition moved what is due
			t.Reset(g.nextTick(g.set.Time().Now()))
		case <-t.C:
			g.ticks.Add(1)
			b := &collect.Batch{Host: host}
			if g.Advance(b, g.set.Time().Now()); len(b.Records) > 0 {
				enqueue(b.Records)
			}
			t.Reset(g.nextTick(g.set.Time().Now()))
		}
	}
	wg.Wait()
	if g.notify != nil {
		g.notify.Close(time.Second) // what the last transitions sent gets a second
	}
}

// Tick is how often the passing of time is judged while a clock has
// several references, whose votes move with time (a reference's bound
// grows in holdover): the latency of a verdict no sample brings, never its
// time. Otherwise the judge sleeps until the first transition due
// (judge.Judged.Due: a source gone stale, a holdover's end), which it
// makes then, and at most judgeIdle, the latency of a REALTIME step's log
// line and clock_step record (dated when the step was seen, not then).
const (
	Tick      = 200 * time.Millisecond
	judgeIdle = time.Second
)

// nextTick is how long the judge may sleep after now.
func (g *Judges) nextTick(now judge.Instant) time.Duration {
	for _, c := range g.crossChecks() {
		if c.size() > 1 {
			return Tick
		}
	}
	d := collect.UntilBoundary(judgeIdle) // with the sources' collections (Agent.loop)
	for _, m := range g.judged() {
		if due, ok := m.j.Due(); ok {
			d = min(d, time.Duration(due-now.MonoNS))
		}
	}
	return max(d, time.Millisecond)
}

// wakeup is signalled when a transition or a new judged clock changes what
// is due.
func (g *Judges) wakeup() chan struct{} {
	g.wakeOnce.Do(func() { g.wake = make(chan struct{}, 1) })
	return g.wake
}

func (g *Judges) kick() {
	select {
	case g.wakeup() <- struct{}{}:
	default:
	}
}
