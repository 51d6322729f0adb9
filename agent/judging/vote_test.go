package judging

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/status"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// xbed is the agent's judging on virtual clocks with n NTP-like references
// of the system clock, each sampled once a (steady) second, the judge tick
// every 200 ms between.
type xbed struct {
	g     *Judges
	v     *stepClocks
	refs  []*Judgement
	names []string
	b     *collect.Batch
	rng   *rand.Rand
	// off is each reference's lie (ns): the clock against it reads off
	// plus noise; quiet stops its samples.
	off   []int64
	quiet []bool
	// every: reference i samples every every[i] seconds (0: each second).
	every []int
	secs  int
}

const xboundU = 20_000 // each sample's own uncertainty u (ns): bound = |offset| + u

func newXbed(t testing.TB, n int) *xbed {
	t.Helper()
	x := &xbed{v: &stepClocks{mono: 1e9, off: 1_700_000_000e9 - 1e9}, b: &collect.Batch{Host: "h"}, rng: rand.New(rand.NewPCG(1, 2)),
		off: make([]int64, n), quiet: make([]bool, n), every: make([]int, n)}
	x.g = &Judges{log: slog.New(slog.DiscardHandler), host: "h"}
	x.g.set.Timeline = judge.NewTimeline(x.v.read)
	for i := range n {
		name := fmt.Sprintf("ntp:10.0.0.%d:123", i+1)
		m, err := x.g.Add("system", name, Config{Enabled: true, Threshold: 20 * time.Millisecond, Holdover: 10 * time.Second, MinSamples: 1}, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		x.refs, x.names = append(x.refs, m), append(x.names, name)
	}
	return x
}

// second runs one steady second: each reference not quiet sampled at the
// second's start, staggered by 10 ms (the true offset is 0: a sample is
// its lie plus noise well within u), then the ticks. It returns the
// /status document after each sample and tick.
func (x *xbed) second() []status.Doc {
	var docs []status.Doc
	start := x.v.mono
	for i, m := range x.refs {
		x.v.mono = start + int64(i+1)*10e6
		if x.quiet[i] || x.every[i] > 1 && x.secs%x.every[i] != 0 {
			continue
		}
		off := x.off[i] + x.rng.Int64N(2*xboundU/4) - xboundU/4
		m.Observe(x.b, judge.Sample{TimeNS: x.v.mono + x.v.off, Synced: true, OffsetNS: off, BoundNS: judge.Abs(off) + xboundU, FreqErrPPB: -1})
		docs = append(docs, x.g.Status(x.v.mono+x.v.off))
	}
	for x.v.mono = start + int64(Tick); x.v.mono <= start+1e9; x.v.mono += int64(Tick) {
		x.g.Advance(x.b, x.g.set.Time().Now())
		docs = append(docs, x.g.Status(x.v.mono+x.v.off))
	}
	x.v.mono = start + 1e9
	x.secs++
	return docs
}

// agrees is each reference's agrees in d, as "true", "false" or "null".
func agreesOf(d status.Doc) map[string]string {
	out := map[string]string{}
	for _, c := range d.Clocks {
		switch {
		case c.Agrees == nil:
			out[c.Source] = "null"
		default:
			out[c.Source] = fmt.Sprint(*c.Agrees)
		}
	}
	return out
}

func combinedOf(t *testing.T, d status.Doc) status.Combined {
	t.Helper()
	if len(d.Combined) != 1 || d.Combined[0].Clock != "system" {
		t.Fatalf("combined %+v, want one entry for system", d.Combined)
	}
	return d.Combined[0]
}

// checkRecords says whether reference_check records are unique by tags +
// time, and returns them.
func checkRecords(t *testing.T, recs []record.Record) []record.Record {
	t.Helper()
	rc := measurements(recs, "reference_check")
	seen := map[string]bool{}
	for _, r := range rc {
		k := fmt.Sprint(r.Tags, r.TimeNS)
		if seen[k] {
			t.Fatalf("two reference_check records share tags and time: %v", k)
		}
		seen[k] = true
	}
	return rc
}

func field(r record.Record, key string) string {
	f, _ := r.Field(key)
	return f.Value()
}

// Three true references agree: each agrees, the combined state is LOCKED
// with a bound no larger than the best reference's, covering 0.
func TestCrossCheckThreeAgree(t *testing.T) {
	x := newXbed(t, 3)
	for range 30 {
		for _, d := range x.second() {
			a := agreesOf(d)
			c := combinedOf(t, d)
			if c.Voting < 2 {
				continue // still locking
			}
			for _, n := range x.names {
				if a[n] == "false" {
					t.Fatalf("true reference %s flagged: %+v", n, c)
				}
			}
			if c.Vote != "agreed" || c.ErrorBoundNS < 0 || judge.Abs(c.OffsetNS) > c.ErrorBoundNS {
				t.Fatalf("combined %+v: want agreed, a bound covering 0", c)
			}
			for _, k := range d.Clocks {
				if c.VotedNS < k.LastSampleNS || c.VotedNS > d.TimeNS {
					t.Fatalf("voted_ns %d: before %s's last sample %d, or after the document's time %d", c.VotedNS, k.Source, k.LastSampleNS, d.TimeNS)
				}
			}
			for _, k := range d.Clocks {
				if k.State == "LOCKED" && c.ErrorBoundNS > k.ErrorBoundNS {
					t.Fatalf("combined bound %d over %s's %d", c.ErrorBoundNS, k.Source, k.ErrorBoundNS)
				}
			}
		}
	}
	d := x.g.Status(x.v.mono + x.v.off)
	c := combinedOf(t, d)
	if c.State != "LOCKED" || c.References != 3 || c.Voting != 3 || c.Agreeing != 3 || len(c.Falsetickers) != 0 || c.ThresholdNS != 20e6 {
		t.Fatalf("combined %+v: want LOCKED, 3 of 3 agreeing, none named", c)
	}
	for n, a := range agreesOf(d) {
		if a != "true" {
			t.Fatalf("%s agrees %s, want true", n, a)
		}
	}
	// Each says agrees once (the first LOCKED one was not cross-checked
	// until the second locked), and nothing else.
	rc := checkRecords(t, x.b.Records)
	to := map[string]int{}
	for _, r := range rc {
		to[field(r, "to")]++
	}
	if len(rc) != 4 || to["agrees"] != 3 || to["not cross-checked"] != 1 {
		t.Fatalf("reference_check records %v, want 3 to agrees after 1 to not cross-checked", rc)
	}
}

// A reference that starts lying by +5 ms (its own judge still LOCKED: the
// threshold is 20 ms) is named a falseticker within 3 of its own samples,
// dated by the sample that named it; the two true ones are never flagged;
// the combined bound covers the truth (0) at every sample and tick; /status,
// /metrics, the records and `monagent status` say so.
func TestCrossCheckOneLiarNamed(t *testing.T) {
	for _, lie := range []int64{5e6, -200e3, -5e6} {
		t.Run(fmt.Sprint(lie), func(t *testing.T) {
			x := newXbed(t, 3)
			for range 10 {
				x.second()
			}
			x.off[2] = lie
			lieFrom := x.v.mono + x.v.off
			named := 0
			for s := 1; s <= 20; s++ {
				for _, d := range x.second() {
					a := agreesOf(d)
					if a[x.names[0]] != "true" || a[x.names[1]] != "true" {
						t.Fatalf("after %d lying samples a true reference is not agreeing: %v", s, a)
					}
					c := combinedOf(t, d)
					if c.Vote != "agreed" || c.ErrorBoundNS < 0 || judge.Abs(c.OffsetNS) > c.ErrorBoundNS || c.State != "LOCKED" {
						t.Fatalf("after %d lying samples combined %+v: want agreed, LOCKED, a bound covering 0", s, c)
					}
					if a[x.names[2]] == "false" && named == 0 {
						named = s
					}
				}
			}
			if named == 0 || named > 3 {
				t.Fatalf("the liar was named after %d of its samples, want 1 to 3", named)
			}
			t.Logf("lie %d ns: named at its sample %d", lie, named)
			d := x.g.Status(x.v.mono + x.v.off)
			c := combinedOf(t, d)
			if c.Agreeing != 2 || c.Voting != 3 || len(c.Falsetickers) != 1 || c.Falsetickers[0] != x.names[2] {
				t.Fatalf("combined %+v: want 2 of 3 agreeing, the liar named", c)
			}
			rc := checkRecords(t, x.b.Records)
			var turned []record.Record
			for _, r := range rc {
				if field(r, "to") == "falseticker" {
					turned = append(turned, r)
				}
				if r.Tag("source") != x.names[2] && (field(r, "to") == "falseticker" || field(r, "to") == "disputed") {
					t.Fatalf("a true reference's record %v", r)
				}
			}
			if len(turned) != 1 || turned[0].Tag("source") != x.names[2] || turned[0].TimeNS <= lieFrom || field(turned[0], "from") != "agrees" {
				t.Fatalf("falseticker records %v: want one for %s, after %d", turned, x.names[2], lieFrom)
			}
			// It was dated by the liar's sample: a second's start + 30 ms.
			if (turned[0].TimeNS-x.v.off)%1e9 != 30e6 {
				t.Fatalf("the falseticker record is at %d, not the liar's sample time", turned[0].TimeNS)
			}
			// /metrics: agrees 1, 1, 0; the combined figures.
			col := status.CrossCheck{Doc: func() status.Doc { return d }}
			if probs, err := testutil.CollectAndLint(col); err != nil || len(probs) > 0 {
				t.Fatalf("lint: %v %v", probs, err)
			}
			want := fmt.Sprintf(`
# HELP monagent_reference_agrees %s
# TYPE monagent_reference_agrees gauge
monagent_reference_agrees{clock="system",source="%s"} 1
monagent_reference_agrees{clock="system",source="%s"} 1
monagent_reference_agrees{clock="system",source="%s"} 0
# HELP monagent_clock_references How many judged references the clock has.
# TYPE monagent_clock_references gauge
monagent_clock_references{clock="system"} 3
# HELP monagent_clock_agreeing_references How many of the clock's references agree (0 when disputed, or not cross-checked).
# TYPE monagent_clock_agreeing_references gauge
monagent_clock_agreeing_references{clock="system"} 2
`, agreesHelp, x.names[0], x.names[1], x.names[2])
			if err := testutil.CollectAndCompare(col, strings.NewReader(want), "monagent_reference_agrees", "monagent_clock_references",
				"monagent_clock_agreeing_references"); err != nil {
				t.Fatal(err)
			}
			if n := testutil.CollectAndCount(col, "monagent_clock_combined_error_bound_seconds", "monagent_clock_combined_offset_seconds"); n != 2 {
				t.Fatalf("%d combined offset and bound metrics, want 2", n)
			}
			if err := testutil.CollectAndCompare(col, strings.NewReader(voteMetric("agreed")), "monagent_clock_vote"); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			status.Render(&out, d)
			t.Logf("\n%s", out.String())
			for _, w := range []string{"FALSETICKER", "agreed", "2 of 3", x.names[2]} {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("rendered lacks %q", w)
				}
			}
			if _, _, f := d.NotLocked(); f != 1 {
				t.Fatalf("NotLocked counts %d falsetickers, want 1", f)
			}
			// The liar tells the truth again: trusted after 3 of its samples.
			x.off[2] = 0
			for range 4 {
				x.second()
			}
			if a := agreesOf(x.g.Status(x.v.mono + x.v.off)); a[x.names[2]] != "true" {
				t.Fatalf("after 4 true samples the former liar agrees %s", a[x.names[2]])
			}
		})
	}
}

const agreesHelp = "1 when the reference agrees with the majority of its clock's references, 0 when it is named a falseticker or the clock is disputed; absent when not cross-checked (the clock's only voting reference) or not voting."

// Two references that disagree: the clock is disputed, both are named,
// the combined state is FREERUN with no bound.
func TestCrossCheckTwoDisputed(t *testing.T) {
	x := newXbed(t, 2)
	for range 5 {
		x.second()
	}
	if c := combinedOf(t, x.g.Status(x.v.mono+x.v.off)); c.Vote != "agreed" || c.State != "LOCKED" {
		t.Fatalf("two true references: %+v, want agreed, LOCKED", c)
	}
	x.off[1] = 5e6
	for s := 1; s <= 6; s++ {
		for i, d := range x.second() {
			if s == 1 && i == 0 {
				continue // before the liar's first lying sample
			}
			if c := combinedOf(t, d); c.Vote != "disputed" || c.State != "FREERUN" || c.ErrorBoundNS != -1 {
				t.Fatalf("at the liar's sample %d: %+v, want disputed, FREERUN, no bound", s, c)
			}
		}
	}
	d := x.g.Status(x.v.mono + x.v.off)
	c := combinedOf(t, d)
	if len(c.Falsetickers) != 2 || c.Agreeing != 0 {
		t.Fatalf("%+v: want both named, none agreeing", c)
	}
	for n, a := range agreesOf(d) {
		if a != "false" {
			t.Fatalf("%s agrees %s, want false (disputed)", n, a)
		}
	}
	col := status.CrossCheck{Doc: func() status.Doc { return d }}
	if err := testutil.CollectAndCompare(col, strings.NewReader(voteMetric("disputed")), "monagent_clock_vote"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col, "monagent_clock_combined_error_bound_seconds", "monagent_clock_combined_offset_seconds"); n != 0 {
		t.Fatalf("%d combined offset and bound metrics for a disputed clock, want none", n)
	}
	var out strings.Builder
	status.Render(&out, d)
	if !strings.Contains(out.String(), "DISPUTED") || !strings.Contains(out.String(), "disputed") {
		t.Fatalf("rendered:\n%s", out.String())
	}
	if n, cb, f := d.NotLocked(); n != 0 || cb != 1 || f != 2 {
		t.Fatalf("NotLocked %d %d %d, want 0 judged, 1 combined not LOCKED, 2 named", n, cb, f)
	}
	rc := checkRecords(t, x.b.Records)
	disputed := 0
	for _, r := range rc {
		if field(r, "to") == "disputed" {
			disputed++
		}
	}
	if disputed != 2 {
		t.Fatalf("%d records to disputed, want 2", disputed)
	}
}

// One reference: not cross-checked, said as such; its own state; agrees
// null, no agrees metric.
func TestCrossCheckSingleNotCrossChecked(t *testing.T) {
	x := newXbed(t, 1)
	x.off[0] = 3e6
	for range 5 {
		x.second()
	}
	d := x.g.Status(x.v.mono + x.v.off)
	c := combinedOf(t, d)
	if c.Vote != "not cross-checked" || c.State != "LOCKED" || c.Agreeing != 0 || c.Voting != 1 || len(c.Falsetickers) != 0 || c.ErrorBoundNS < 3e6 {
		t.Fatalf("%+v: want not cross-checked, its own LOCKED, its interval", c)
	}
	if a := agreesOf(d); a[x.names[0]] != "null" {
		t.Fatalf("agrees %s, want null", a[x.names[0]])
	}
	if n := testutil.CollectAndCount(status.CrossCheck{Doc: func() status.Doc { return d }}, "monagent_reference_agrees"); n != 0 {
		t.Fatalf("%d agrees metrics for a clock not cross-checked", n)
	}
	var out strings.Builder
	status.Render(&out, d)
	if !strings.Contains(out.String(), "not cross-checked") {
		t.Fatalf("rendered:\n%s", out.String())
	}
}

// Every reference stale: they go HOLDOVER (still voting with grown
// bounds), then FREERUN: the clock is FREERUN, none votes, all are listed
// as absent.
func TestCrossCheckAllStale(t *testing.T) {
	x := newXbed(t, 3)
	x.g.Advance(x.b, x.g.set.Time().Now()) // a vote with no sample yet
	if c := combinedOf(t, x.g.Status(x.v.mono+x.v.off)); c.State != "UNKNOWN" || c.Vote != "none" {
		t.Fatalf("before any sample: %+v, want UNKNOWN", c)
	}
	for range 5 {
		x.second()
	}
	for i := range x.quiet {
		x.quiet[i] = true
	}
	sawHoldover := false
	for range 20 {
		for _, d := range x.second() {
			c := combinedOf(t, d)
			switch {
			case c.Vote == "agreed" && c.State == "HOLDOVER":
				sawHoldover = true
			case c.Vote == "agreed" && c.State == "LOCKED":
				if sawHoldover {
					t.Fatalf("LOCKED again after HOLDOVER with no sample: %+v", c)
				}
			case c.Vote == "none":
				if c.State != "FREERUN" || len(c.Absent) != 3 || c.Voting != 0 || c.ErrorBoundNS != -1 {
					t.Fatalf("none voting: %+v, want FREERUN, all 3 absent", c)
				}
			default:
				t.Fatalf("stale references: %+v", c)
			}
		}
	}
	d := x.g.Status(x.v.mono + x.v.off)
	if c := combinedOf(t, d); c.Vote != "none" || !sawHoldover {
		t.Fatalf("after 20 s of silence: %+v (holdover seen %v), want none", c, sawHoldover)
	}
	// Each went absent at its own FREERUN transition, not at a later tick.
	free := map[string]int64{}
	for _, r := range measurements(x.b.Records, "sync_state") {
		if field(r, "to") == "FREERUN" {
			free[r.Tag("source")] = r.TimeNS
		}
	}
	for _, r := range measurements(x.b.Records, "reference_check") {
		if field(r, "to") == "absent" && r.TimeNS != free[r.Tag("source")] {
			t.Fatalf("%s absent at %d, its FREERUN at %d", r.Tag("source"), r.TimeNS, free[r.Tag("source")])
		}
	}
	for n, a := range agreesOf(d) {
		if a != "null" {
			t.Fatalf("%s agrees %s with no vote, want null", n, a)
		}
	}
	checkRecords(t, x.b.Records)
}

// A sample that changes no verdict costs the vote no allocation.
func TestCrossCheckSampleNoAlloc(t *testing.T) {
	x := newXbed(t, 3)
	for range 5 {
		x.second()
	}
	var nop nopAdder
	m := x.refs[0]
	at := x.v.mono + x.v.off
	allocs := testing.AllocsPerRun(200, func() {
		at++
		m.Observe(nop, judge.Sample{TimeNS: at, MonoNS: at - x.v.off, Synced: true, OffsetNS: 1000, BoundNS: 21_000, FreqErrPPB: -1})
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per sample, want 0", allocs)
	}
}

type nopAdder struct{}

func (nopAdder) Add(string, int64, []record.Tag, ...record.Field) {}

// The CloudEvent of a verdict's change.
func TestReferenceCheckEvent(t *testing.T) {
	e := status.ReferenceCheckEvent("boarda", 7, status.ReferenceCheck{Clock: "system", Source: "ntp:10.0.0.3:123", From: "agrees", To: "falseticker",
		Vote: "agreed", OffsetNS: 5e6, BoundNS: 5.02e6, CombinedBoundNS: 15e3, TimeNS: 1_700_000_000e9})
	if e.Type != "io.monagent.reference-check.v1" || e.Subject != "system/ntp:10.0.0.3:123" || e.Source != "monagent://boarda" ||
		!strings.Contains(string(e.Data), `"to":"falseticker"`) || !e.Time.Equal(time.Unix(1_700_000_000, 0)) {
		t.Fatalf("%+v %s", e, e.Data)
	}
}

// voteMetric is monagent_clock_vote for the system clock with vote v.
func voteMetric(v string) string {
	out := "# HELP monagent_clock_vote The vote across the clock's references: 1 for the current outcome (agreed, disputed, not_cross_checked, none), 0 for the others.\n# TYPE monagent_clock_vote gauge\n"
	for _, w := range status.Votes {
		val := 0
		if w[1] == v {
			val = 1
		}
		out += fmt.Sprintf("monagent_clock_vote{clock=\"system\",vote=%q} %d\n", w[1], val)
	}
	return out
}

// Two ptp4l instances discipline two clocks (their own PHCs): each is a
// vote of its own, not cross-checked, never disputed against the other.
func TestCrossCheckPtp4lInstancesApart(t *testing.T) {
	v := &stepClocks{mono: 1e9, off: 1_700_000_000e9 - 1e9}
	g := &Judges{log: slog.New(slog.DiscardHandler)}
	g.set.Timeline = judge.NewTimeline(v.read)
	var ms []*Judgement
	for _, src := range []string{"ptp4l:/var/run/ptp4l-a", "ptp4l:/var/run/ptp4l-b"} {
		m, err := g.Add("ptp4l", src, Config{Enabled: true, Threshold: 100 * time.Microsecond, Holdover: 5 * time.Second, MinSamples: 1}, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	b := &collect.Batch{}
	for range 5 {
		for i, m := range ms {
			v.mono += 1e8
			off := int64(i) * 50_000 // 50 µs apart: disputed if they voted together
			m.Observe(b, judge.Sample{TimeNS: v.mono + v.off, Synced: true, OffsetNS: off, BoundNS: off + 1000, FreqErrPPB: -1})
		}
	}
	d := g.Status(v.mono + v.off)
	if len(d.Combined) != 2 || d.Combined[0].Clock != "ptp4l:/var/run/ptp4l-a" || d.Combined[1].Clock != "ptp4l:/var/run/ptp4l-b" {
		t.Fatalf("combined %+v, want one per ptp4l instance", d.Combined)
	}
	for _, c := range d.Combined {
		if c.Vote != "not cross-checked" || c.State != "LOCKED" || c.References != 1 {
			t.Fatalf("%+v: want not cross-checked, LOCKED", c)
		}
	}
	for _, r := range measurements(b.Records, "reference_check") {
		if r.Tag("clock") != "ptp4l" || field(r, "to") != "not cross-checked" {
			t.Fatalf("record %v", r)
		}
	}
}

// Sources sample, the tick votes and /status and /metrics read at once:
// no race (run with -race), every reference agreeing at the end.
func TestCrossCheckConcurrent(t *testing.T) {
	g := &Judges{log: slog.New(slog.DiscardHandler)}
	var ms []*Judgement
	for i := range 3 {
		m, err := g.Add("system", fmt.Sprintf("ntp:%d", i), Config{Enabled: true, Threshold: time.Millisecond, Holdover: time.Minute, MinSamples: 1}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			b := &collect.Batch{}
			for range 300 {
				now := time.Now().UnixNano()
				m.Observe(b, judge.Sample{TimeNS: now, Synced: true, OffsetNS: 1000, BoundNS: 21_000, FreqErrPPB: -1})
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			b := &collect.Batch{}
			g.Advance(b, g.set.Time().Now())
			d := g.Status(time.Now().UnixNano())
			testutil.CollectAndCount(status.CrossCheck{Doc: func() status.Doc { return d }})
		}
	})
	// The samplers end after 300 samples each; the reader runs on until then.
	for i := 0; i < 10_000 && g.Status(time.Now().UnixNano()).Combined[0].Agreeing < 3; i++ {
		time.Sleep(time.Millisecond)
	}
	close(done)
	wg.Wait()
	if c := g.Status(time.Now().UnixNano()).Combined[0]; c.Agreeing != 3 || c.Vote != "agreed" {
		t.Fatalf("%+v: want 3 agreeing", c)
	}
}

// References sampled at different rates (a PPS every second, NTP servers
// every 4 s, with stale after 3 s the judge would lose them: here 20 s): a
// liar is named within 3 of its own samples whichever it is, the others
// never.
func TestCrossCheckMixedRates(t *testing.T) {
	for _, liar := range []int{0, 1} {
		t.Run(fmt.Sprint("liar ", liar), func(t *testing.T) {
			x := &xbed{v: &stepClocks{mono: 1e9, off: 1_700_000_000e9 - 1e9}, b: &collect.Batch{Host: "h"}, rng: rand.New(rand.NewPCG(3, 4)),
				off: make([]int64, 3), quiet: make([]bool, 3), every: []int{1, 4, 4}}
			x.g = &Judges{log: slog.New(slog.DiscardHandler), host: "h"}
			x.g.set.Timeline = judge.NewTimeline(x.v.read)
			for _, name := range []string{"pps:gnss0", "ntp:10.0.0.1:123", "ntp:10.0.0.2:123"} {
				m, err := x.g.Add("system", name, Config{Enabled: true, Threshold: 20 * time.Millisecond, Holdover: time.Minute, MinSamples: 1}, 20*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				x.refs, x.names = append(x.refs, m), append(x.names, name)
			}
			for range 20 {
				x.second()
			}
			x.off[liar] = 300_000 // the PPS on the wrong edge, or a server 300 µs off
			own, named := 0, 0
			for s := 0; s < 40 && named == 0; s++ {
				if x.every[liar] <= 1 || x.secs%x.every[liar] == 0 {
					own++
				}
				for _, d := range x.second() {
					a := agreesOf(d)
					for i, n := range x.names {
						if i != liar && a[n] != "true" {
							t.Fatalf("true reference %s agrees %s", n, a[n])
						}
					}
					if a[x.names[liar]] == "false" && named == 0 {
						named = own
					}
				}
			}
			if named < 1 || named > 3 {
				t.Fatalf("%s named at its lying sample %d, want 1 to 3", x.names[liar], named)
			}
			t.Logf("%s (every %d s) named at its lying sample %d", x.names[liar], max(1, x.every[liar]), named)
		})
	}
}
