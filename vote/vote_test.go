package vote

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/judge"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const us = int64(1000)

func voter(t testing.TB, cfg Config) *Voter {
	t.Helper()
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ref is a reference whose interval is [off − u, off + u].
func ref(src string, st judge.State, off, u, at int64) Ref {
	return Ref{Source: src, State: st, OffsetNS: off, BoundNS: judge.Abs(off) + u, SampleNS: at}
}

func render(b *strings.Builder, now int64, r *Result) {
	fmt.Fprintf(b, "vote at %d: %s majority=%v references=%d voting=%d truechimers=%d agreeing=%d", now, r.Status, r.Majority, r.References, r.Voting, r.Truechimers, r.Agreeing)
	if r.Valid {
		fmt.Fprintf(b, " offset=%d bound=%d half=%d [%d, %d]", r.OffsetNS, r.BoundNS, r.HalfWidthNS, r.LoNS, r.HiNS)
	} else {
		b.WriteString(" no answer")
	}
	fmt.Fprintf(b, " named=%v\n", r.Named)
	for _, o := range r.Refs {
		fmt.Fprintf(b, "  %-6s %-17s", o.Source, o.Verdict)
		switch {
		case o.Bad:
			b.WriteString(" bad input")
		case o.Voting:
			fmt.Fprintf(b, " [%d, %d] in=%v", o.LoNS, o.HiNS, o.InMajority)
		default:
			b.WriteString(" does not vote")
		}
		if o.Changed {
			fmt.Fprintf(b, " changed@%d", o.ChangedNS)
		}
		b.WriteByte('\n')
	}
}

// round is one vote of a scenario: the references as they are at now.
type round struct {
	now  int64
	refs []Ref
}

// repeat is n rounds at samples 1..n of refs made by f(sample time).
func repeat(n int, f func(at int64) []Ref) []round {
	var rs []round
	for k := 1; k <= n; k++ {
		at := int64(k) * 1e9
		rs = append(rs, round{now: at, refs: f(at)})
	}
	return rs
}

var L, H, F, U = judge.Locked, judge.Holdover, judge.Freerun, judge.Unknown

// The edge cases of doc.go, each a few votes, their whole results compared
// with testdata/edges.golden (go test -run Golden -update to rewrite it
// after a reviewed change).
func TestGolden(t *testing.T) {
	cases := []struct {
		name   string
		rounds []round
	}{
		{"two agree and one liar of +5 ms: the liar out of the answer at once, named at its 2nd sample", repeat(3, func(at int64) []Ref {
			return []Ref{ref("a", L, 10*us, 50*us, at), ref("b", L, -5*us, 40*us, at), ref("liar", L, 5000*us, 50*us, at)}
		})},
		{"two that disagree: disputed, no answer, both named at their 2nd sample", repeat(3, func(at int64) []Ref {
			return []Ref{ref("a", L, 10*us, 50*us, at), ref("liar", L, -200*us, 50*us, at)}
		})},
		{"two that disagree, the liar sampled every 3rd vote: a dispute counts once per round of everyone's samples, both named at the liar's 2nd", repeat(7, func(at int64) []Ref {
			return []Ref{ref("a", L, 10*us, 50*us, at), ref("liar", L, -200*us, 50*us, 1e9+(at-1e9)/3e9*3e9)}
		})},
		{"three all apart (1-1-1): disputed", repeat(2, func(at int64) []Ref {
			return []Ref{ref("a", L, 0, 50*us, at), ref("b", L, 1000*us, 50*us, at), ref("c", L, -1000*us, 50*us, at)}
		})},
		{"a tie between two majorities (one wide meets two narrow that do not meet): disputed", repeat(2, func(at int64) []Ref {
			return []Ref{ref("wide", L, 0, 1000*us, at), ref("low", L, -900*us, 50*us, at), ref("high", L, 900*us, 50*us, at)}
		})},
		{"intervals that only touch share their point", repeat(1, func(at int64) []Ref {
			return []Ref{ref("a", L, 0, 50*us, at), ref("b", L, 100*us, 50*us, at), ref("c", L, 50*us, 10*us, at)}
		})},
		{"one in HOLDOVER (its bound grown by the judge) still votes and agrees", []round{
			{now: 100e9, refs: []Ref{ref("a", L, 10*us, 50*us, 100e9), ref("b", L, -5*us, 40*us, 100e9), ref("lost", H, 80*us, 100*us, 40e9)}},
		}},
		{"bad input outnumbering the true: no majority", repeat(1, func(at int64) []Ref {
			return []Ref{ref("a", L, 0, 50*us, at), ref("inf", L, 0, math.MaxInt64, at), ref("inf2", H, 0, math.MaxInt64, at)}
		})},
		{"one in HOLDOVER grown here at 10 µs/s for 10 s: agrees only with its growth", []round{
			{now: 20e9, refs: []Ref{ref("a", L, 0, 20*us, 20e9), ref("b", L, 0, 20*us, 20e9), {Source: "lost", State: H, OffsetNS: 150 * us, BoundNS: 200 * us, SampleNS: 10e9, GrowPPB: 10 * us}}},
			{now: 20e9, refs: []Ref{ref("a", L, 0, 20*us, 20e9), ref("b", L, 0, 20*us, 20e9), {Source: "lost", State: H, OffsetNS: 150 * us, BoundNS: 200 * us, SampleNS: 10e9}}},
		}},
		{"one reference: not cross-checked, its own interval, never agreeing", repeat(2, func(at int64) []Ref {
			return []Ref{ref("only", L, 10*us, 50*us, at), ref("off", F, 0, 0, 0)}
		})},
		{"all stale: nothing votes, all listed, no answer", repeat(1, func(at int64) []Ref {
			return []Ref{ref("a", F, 10*us, 50*us, at-100e9), ref("b", U, 0, 0, 0), ref("c", F, 0, math.MaxInt64, at)}
		})},
		{"an outlier (FREERUN for its offset only: a PPS on the wrong second) beside two true: it votes, named at its 2nd sample", repeat(3, func(at int64) []Ref {
			o := ref("pps", F, 1e9, 20*us, at)
			o.Outlier = true
			return []Ref{ref("a", L, 10*us, 50*us, at), ref("b", L, -5*us, 40*us, at), o}
		})},
		{"an outlier beside one true reference: disputed", repeat(2, func(at int64) []Ref {
			o := ref("pps", F, 1e9, 20*us, at)
			o.Outlier = true
			return []Ref{ref("a", L, 10*us, 50*us, at), o}
		})},
		{"the clock truly 30 ms off: three outliers agree on it", repeat(1, func(at int64) []Ref {
			rs := []Ref{ref("a", F, 30000*us, 50*us, at), ref("b", F, 30010*us, 40*us, at), ref("c", F, 29990*us, 30*us, at)}
			for i := range rs {
				rs[i].Outlier = true
			}
			return rs
		})},
		{"bad input beside five true references: +Inf bound, the year 2036, MinInt64, bound below |offset|: each votes, none agrees", repeat(2, func(at int64) []Ref {
			return []Ref{
				ref("a", L, 10*us, 50*us, at), ref("b", L, -5*us, 40*us, at), ref("c", L, 0, 30*us, at), ref("d", L, 20*us, 30*us, at), ref("e", H, -20*us, 90*us, at),
				{Source: "inf", State: L, OffsetNS: 3 * us, BoundNS: math.MaxInt64, SampleNS: at},
				{Source: "y2036", State: L, OffsetNS: 1 << 62, BoundNS: 1<<62 + 50*us, SampleNS: at},
				{Source: "minint", State: H, OffsetNS: math.MinInt64, BoundNS: math.MaxInt64 - 1, SampleNS: at},
				{Source: "short", State: L, OffsetNS: -90 * us, BoundNS: 10 * us, SampleNS: at},
			}
		})},
		{"ends saturate at ±MaxInt64, never wrap (growth at MaxInt64 ppb for 100 years)", repeat(1, func(at int64) []Ref {
			return []Ref{
				{Source: "top", State: H, OffsetNS: math.MaxInt64 - 10, BoundNS: math.MaxInt64 - 1, SampleNS: at - 100*365*86400e9, GrowPPB: math.MaxInt64},
				{Source: "bottom", State: L, OffsetNS: -(math.MaxInt64 - 10), BoundNS: math.MaxInt64 - 1, SampleNS: at},
				{Source: "wide", State: L, OffsetNS: math.MaxInt64 / 2, BoundNS: math.MaxInt64 - 1, SampleNS: at},
			}
		})},
		{"a liar that turns true is cleared at its 3rd agreeing sample", func() []round {
			rs := repeat(5, func(at int64) []Ref {
				off := 5000 * us
				if at > 2e9 {
					off = 0
				}
				return []Ref{ref("a", L, 0, 50*us, at), ref("b", L, 0, 50*us, at), ref("x", L, off, 50*us, at)}
			})
			return rs
		}()},
		{"votes between a reference's own samples do not count for it", []round{
			{now: 1e9, refs: []Ref{ref("a", L, 0, 50*us, 1e9), ref("b", L, 0, 50*us, 1e9), ref("slow", L, 900*us, 50*us, 1e9)}},
			{now: 2e9, refs: []Ref{ref("a", L, 0, 50*us, 2e9), ref("b", L, 0, 50*us, 2e9), ref("slow", L, 900*us, 50*us, 1e9)}},
			{now: 3e9, refs: []Ref{ref("a", L, 0, 50*us, 3e9), ref("b", L, 0, 50*us, 3e9), ref("slow", L, 900*us, 50*us, 1e9)}},
			{now: 4e9, refs: []Ref{ref("a", L, 0, 50*us, 4e9), ref("b", L, 0, 50*us, 4e9), ref("slow", L, 900*us, 50*us, 4e9)}},
		}},
	}
	var b strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&b, "== %s\n", c.name)
		v := voter(t, Default())
		var r Result
		for _, rd := range c.rounds {
			v.Vote(rd.now, rd.refs, &r)
			checkInvariants(t, rd.refs, &r)
			render(&b, rd.now, &r)
		}
		b.WriteByte('\n')
	}
	golden(t, "edges.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run Golden -update to rewrite it after review); got:\n%s", path, got)
	}
}

// checkInvariants holds for every vote: the combined interval inside every
// truechimer's, its bound at most the best truechimer's, the majority as
// defined, the counts consistent.
func checkInvariants(t testing.TB, refs []Ref, r *Result) {
	t.Helper()
	if r.References != len(refs) || len(r.Refs) != len(refs) {
		t.Fatalf("references %d, outcomes %d, given %d", r.References, len(r.Refs), len(refs))
	}
	voting, in, agreeing, named := 0, 0, 0, 0
	best := int64(math.MaxInt64)
	for i, o := range r.Refs {
		if o.Source != refs[i].Source {
			t.Fatalf("outcome %d is %q, reference %q", i, o.Source, refs[i].Source)
		}
		if o.Voting {
			voting++
		} else if o.Verdict != Absent || o.InMajority {
			t.Fatalf("%s does not vote yet %v, in=%v", o.Source, o.Verdict, o.InMajority)
		}
		if o.InMajority {
			in++
			if o.Bad {
				t.Fatalf("%s: bad input in the majority", o.Source)
			}
			if !r.Valid || o.LoNS > r.LoNS || o.HiNS < r.HiNS {
				t.Fatalf("%s [%d, %d] does not contain the combined [%d, %d]", o.Source, o.LoNS, o.HiNS, r.LoNS, r.HiNS)
			}
			// Its bound as voted: the judge's, or grown to now.
			b := max(judge.Abs(o.LoNS), judge.Abs(o.HiNS))
			if refs[i].GrowPPB == 0 && b != refs[i].BoundNS {
				t.Fatalf("%s interval [%d, %d] is not offset %d ± (bound %d − |offset|)", o.Source, o.LoNS, o.HiNS, refs[i].OffsetNS, refs[i].BoundNS)
			}
			best = min(best, b)
		}
		switch o.Verdict {
		case Agrees:
			agreeing++
		case Falseticker, Contested:
			named++
		case Unchecked:
			if r.Status != Single {
				t.Fatalf("%s unchecked in a %s vote", o.Source, r.Status)
			}
		}
		if o.Verdict == Contested && r.Status != Disputed || o.Verdict == Falseticker && r.Status != Agreed {
			t.Fatalf("%s %v in a %s vote", o.Source, o.Verdict, r.Status)
		}
	}
	if voting != r.Voting || in != r.Truechimers || agreeing != r.Agreeing || named != len(r.Named) {
		t.Fatalf("counts voting %d/%d truechimers %d/%d agreeing %d/%d named %d/%d", r.Voting, voting, r.Truechimers, in, r.Agreeing, agreeing, len(r.Named), named)
	}
	switch r.Status {
	case Agreed:
		if !r.Majority || 2*in <= voting || !r.Valid {
			t.Fatalf("agreed without a majority: %d of %d", in, voting)
		}
		if r.BoundNS > best {
			t.Fatalf("combined bound %d over the best truechimer's %d", r.BoundNS, best)
		}
	case Disputed:
		if r.Majority || r.Valid || voting < 2 {
			t.Fatalf("disputed with majority %v, answer %v, %d voting", r.Majority, r.Valid, voting)
		}
	case Single:
		if r.Majority || voting != 1 || r.Agreeing != 0 {
			t.Fatalf("single with majority %v, %d voting, %d agreeing", r.Majority, voting, r.Agreeing)
		}
	case None:
		if r.Majority || r.Valid || voting != 0 {
			t.Fatalf("none with majority %v, answer %v, %d voting", r.Majority, r.Valid, voting)
		}
	}
	if r.Valid {
		// The answer as an interval about its offset covers [lo, hi].
		u := r.BoundNS - judge.Abs(r.OffsetNS)
		if u < 0 || r.LoNS > r.HiNS || r.OffsetNS-u > r.LoNS || r.OffsetNS+u < r.HiNS || r.HalfWidthNS < 0 {
			t.Fatalf("answer offset %d bound %d does not cover [%d, %d]", r.OffsetNS, r.BoundNS, r.LoNS, r.HiNS)
		}
		if r.BoundNS != max(judge.Abs(r.LoNS), judge.Abs(r.HiNS)) {
			t.Fatalf("bound %d is not max(|lo|, |hi|) of [%d, %d]", r.BoundNS, r.LoNS, r.HiNS)
		}
	}
}

func TestNames(t *testing.T) {
	if Disputed.String() != "disputed" || Status(9).String() != "Status(9)" || Unchecked.String() != "not cross-checked" || Verdict(9).String() != "Verdict(9)" {
		t.Fatal(Disputed, Status(9), Unchecked, Verdict(9))
	}
}

func TestFromView(t *testing.T) {
	v := judge.View{Clock: "system", Source: "ntp:a", State: judge.Holdover, OffsetNS: -7, BoundNS: 99, LastSampleNS: 5, Outlier: true}
	if got, want := FromView(v), (Ref{Source: "ntp:a", State: judge.Holdover, OffsetNS: -7, BoundNS: 99, SampleNS: 5, Outlier: true}); got != want {
		t.Fatalf("FromView %+v, want %+v", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{FlagAfter: 0, ClearAfter: 3}, "flag_after"},
		{Config{FlagAfter: 4, ClearAfter: 3}, "flag_after"},
		{Config{FlagAfter: 2, ClearAfter: 0}, "clear_after"},
		{Config{FlagAfter: 2, ClearAfter: 3, StaleNS: -1}, "stale"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// StaleNS keeps a LOCKED reference whose sample is old out of the vote.
func TestStale(t *testing.T) {
	v := voter(t, Config{FlagAfter: 2, ClearAfter: 3, StaleNS: 10e9})
	var r Result
	refs := []Ref{ref("a", L, 0, 50*us, 100e9), ref("b", L, 0, 50*us, 100e9), ref("old", L, 0, 50*us, 89e9)}
	v.Vote(100e9, refs, &r)
	if r.Voting != 2 || r.Refs[2].Voting || r.Refs[2].Verdict != Absent {
		t.Fatalf("a sample 11 s old with stale 10 s votes: %+v", r.Refs[2])
	}
	refs[2].SampleNS = 90e9
	v.Vote(100e9, refs, &r)
	if r.Voting != 3 {
		t.Fatalf("a sample 10 s old with stale 10 s does not vote")
	}
}

// The Voter follows references by name: reordered, added and removed,
// each keeps its own dwell.
func TestFollow(t *testing.T) {
	v := voter(t, Default())
	var r Result
	liar := func(at int64) Ref { return ref("liar", L, 5000*us, 50*us, at) }
	v.Vote(1e9, []Ref{ref("a", L, 0, 50*us, 1e9), ref("b", L, 0, 50*us, 1e9), liar(1e9)}, &r)
	// Reordered, with one more: the liar's first disagreement is kept.
	v.Vote(2e9, []Ref{liar(2e9), ref("c", L, 0, 50*us, 2e9), ref("b", L, 0, 50*us, 2e9), ref("a", L, 0, 50*us, 2e9)}, &r)
	if r.Refs[0].Source != "liar" || r.Refs[0].Verdict != Falseticker || !r.Refs[0].Changed || r.Refs[0].ChangedNS != 2e9 {
		t.Fatalf("the liar after reordering: %+v", r.Refs[0])
	}
	// Removed, then back: a new reference, trusted until it disagrees twice.
	v.Vote(3e9, []Ref{ref("a", L, 0, 50*us, 3e9), ref("b", L, 0, 50*us, 3e9)}, &r)
	v.Vote(4e9, []Ref{ref("a", L, 0, 50*us, 4e9), ref("b", L, 0, 50*us, 4e9), liar(4e9)}, &r)
	if r.Refs[2].Verdict != Agrees || r.Named != nil && len(r.Named) != 0 {
		t.Fatalf("the liar back, first sample: %+v named %v", r.Refs[2], r.Named)
	}
	v.Vote(5e9, []Ref{ref("a", L, 0, 50*us, 5e9), ref("b", L, 0, 50*us, 5e9), liar(5e9)}, &r)
	if r.Refs[2].Verdict != Falseticker || len(r.Named) != 1 || r.Named[0] != "liar" {
		t.Fatalf("the liar back, second sample: %+v named %v", r.Refs[2], r.Named)
	}
}
