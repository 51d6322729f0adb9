package vote

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/monagent/monagent/judge"
)

// source is a synthetic reference measured by two-way exchanges, as the own
// NTP probe measures a server over loopback or veth: each way's delay is a
// fixed path plus exponential queueing, the offset is off by half the
// difference of the two ways (the asymmetry), and the bound is the judge's
// Exchange bound, |offset| + half the round trip + the stamps' uncertainty,
// which contains the truth whatever the queueing. With outlier > 0 that is
// the chance per sample that the bound fails anyway (the error put beyond
// it), far worse than a correct bound.
type source struct {
	name     string
	every    int   // samples every this many rounds
	pathNS   int64 // one way
	queueNS  float64
	stampsNS int64
	outlier  float64
	lieNS    int64 // added to the offset (0: true)
	at       int64 // latest sample time
	last     Ref
}

func (s *source) sample(rng *rand.Rand, at, truth int64) Ref {
	q1 := int64(rng.ExpFloat64() * s.queueNS)
	q2 := int64(rng.ExpFloat64() * s.queueNS)
	delay := 2*s.pathNS + q1 + q2
	stamp := int64(rng.NormFloat64() * float64(s.stampsNS) / 3)
	stamp = max(-s.stampsNS, min(s.stampsNS, stamp))
	off := truth + (q1-q2)/2 + stamp
	u := judge.Exchange(0, delay, 0, 0, s.stampsNS)
	if s.outlier > 0 && rng.Float64() < s.outlier {
		e := u + 1 + int64(rng.ExpFloat64()*float64(u))
		if rng.IntN(2) == 0 {
			e = -e
		}
		off = truth + e
	}
	off += s.lieNS
	s.at = at
	s.last = Ref{Source: s.name, State: judge.Locked, OffsetNS: off, BoundNS: judge.Abs(off) + u, SampleNS: at}
	return s.last
}

// truthAt is the clock's true offset: a slow wander of a few µs, the same
// for every reference.
func truthAt(k int) int64 { return int64(5000 * math.Sin(float64(k)/5000)) }

// sim runs rounds of samples of srcs (each at its own cadence) and a vote
// at each, calling check after each vote.
func sim(t testing.TB, cfg Config, seed uint64, rounds int, srcs []*source, check func(k int, refs []Ref, r *Result)) {
	v := voter(t, cfg)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	refs := make([]Ref, len(srcs))
	var r Result
	for k := 0; k < rounds; k++ {
		at := int64(k+1) * 1e9
		truth := truthAt(k)
		for i, s := range srcs {
			if k%s.every == 0 {
				s.sample(rng, at, truth)
			}
			refs[i] = s.last
		}
		v.Vote(at, refs, &r)
		check(k, refs, &r)
	}
}

func loopbackish(name string, every int) *source {
	return &source{name: name, every: every, pathNS: 8000, queueNS: 6000, stampsNS: 2000}
}

// namedChanges counts verdict changes to a name.
func namedChanges(r *Result) int {
	n := 0
	for _, o := range r.Refs {
		if o.Changed && (o.Verdict == Falseticker || o.Verdict == Contested) {
			n++
		}
	}
	return n
}

// True references with realistic jitter are never named: 10⁶ samples of
// each, the bound (the judge's Exchange bound) always holding, and the
// combined interval always covering the truth.
func TestQuietHonest(t *testing.T) {
	rounds := 1_000_000
	if testing.Short() {
		rounds = 50_000
	}
	for _, n := range []int{2, 3, 5} {
		srcs := make([]*source, n)
		for i := range srcs {
			srcs[i] = loopbackish(string(rune('a'+i)), 1)
			srcs[i].queueNS *= float64(i + 1) // unequal paths: unequal widths
		}
		named, misses, agreed := 0, 0, 0
		sim(t, Default(), uint64(n), rounds, srcs, func(k int, refs []Ref, r *Result) {
			named += namedChanges(r)
			if r.Status != Agreed {
				t.Fatalf("n=%d round %d: %s with true references", n, k, r.Status)
			}
			agreed++
			if tr := truthAt(k); r.LoNS > tr || r.HiNS < tr {
				misses++
			}
			if k%100_000 == 0 {
				checkInvariants(t, refs, r)
			}
		})
		if named != 0 || misses != 0 {
			t.Errorf("n=%d, %d samples each: %d true references named, the combined interval missed the truth %d times in %d", n, rounds, named, misses, agreed)
		}
		t.Logf("%d true references, %d samples each: named %d times, combined interval missed the truth %d times in %d votes", n, rounds, named, misses, agreed)
	}
}

// References whose bound fails at random (p = 10⁻⁴ per sample, the error
// put beyond it) are still never named with the default dwell; with
// FlagAfter 1 they are, so the dwell is what keeps the vote quiet.
func TestQuietOutliers(t *testing.T) {
	rounds := 1_000_000
	if testing.Short() {
		rounds = 100_000
	}
	run := func(cfg Config) (named, outlierVotes int) {
		srcs := []*source{loopbackish("a", 1), loopbackish("b", 1), loopbackish("c", 2)}
		for _, s := range srcs {
			s.outlier = 1e-4
		}
		sim(t, cfg, 7, rounds, srcs, func(k int, refs []Ref, r *Result) {
			named += namedChanges(r)
			for _, o := range r.Refs {
				if o.Voting && !o.InMajority {
					outlierVotes++
				}
			}
		})
		return named, outlierVotes
	}
	named, out := run(Default())
	if named != 0 {
		t.Errorf("default dwell: true references with failing bounds named %d times in %d rounds (%d votes outside the majority)", named, rounds, out)
	}
	if out == 0 {
		t.Fatalf("the outliers never put a reference outside the majority: the test proves nothing")
	}
	named1, _ := run(Config{FlagAfter: 1, ClearAfter: 3})
	if named1 == 0 {
		t.Errorf("flag_after 1 named no reference in %d rounds with %d votes outside the majority: the test cannot tell the dwell's effect", rounds, out)
	}
	t.Logf("%d rounds, %d votes outside the majority; named: %d with the default dwell, %d with flag_after 1", rounds, out, named, named1)
}

// A liar of +5 ms and one of −200 µs, starting at a random round, is named
// within 3 of its own samples after it starts lying (here always at the
// 2nd), sampled as often as the others or 3 times less often; the others
// are never named and the combined interval keeps covering the truth.
func TestLiarCaught(t *testing.T) {
	trials := 300
	if testing.Short() {
		trials = 30
	}
	for _, lie := range []int64{5_000_000, -200_000} {
		for _, every := range []int{1, 3} {
			worst := 0
			for trial := range trials {
				srcs := []*source{loopbackish("a", 1), loopbackish("b", 1), loopbackish("liar", every)}
				start := 50 + trial%37
				lying, caught := 0, 0
				var at int64
				sim(t, Default(), uint64(trial)+1, start+40, srcs, func(k int, refs []Ref, r *Result) {
					if k == start {
						srcs[2].lieNS = lie // from its next sample on
					}
					o := r.Refs[2]
					if refs[2].SampleNS != at {
						at = refs[2].SampleNS
						if k > start {
							lying++
						}
					}
					if o.Changed && o.Verdict == Falseticker && caught == 0 {
						if lying == 0 {
							t.Fatalf("lie %d: liar named before it lied (round %d)", lie, k)
						}
						caught = lying
					}
					if r.Refs[0].Verdict != Agrees || r.Refs[1].Verdict != Agrees {
						t.Fatalf("lie %d trial %d round %d: a true reference named: %+v %+v", lie, trial, k, r.Refs[0], r.Refs[1])
					}
					if tr := truthAt(k); r.Status != Agreed || r.LoNS > tr || r.HiNS < tr {
						t.Fatalf("lie %d trial %d round %d: %s [%d, %d] misses the truth %d", lie, trial, k, r.Status, r.LoNS, r.HiNS, tr)
					}
				})
				if caught == 0 || caught > 3 {
					t.Fatalf("lie %d every %d trial %d: named at its lying sample %d (0: never), want 1 to 3", lie, every, trial, caught)
				}
				worst = max(worst, caught)
			}
			t.Logf("lie %+d ns, liar sampled every %d rounds: named at its lying sample %d at the latest over %d trials", lie, every, worst, trials)
		}
	}
}
