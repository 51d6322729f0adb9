package vote

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/monagent/monagent/judge"
)

// refsFrom decodes fuzz bytes into references: per reference 1 byte of
// state, 8 of offset, 8 of bound (small values common, extremes possible).
func refsFrom(data []byte, at int64) []Ref {
	var refs []Ref
	for i := 0; len(data) >= 17 && len(refs) < 40; i++ {
		st := judge.State(data[0] % 5)
		off := int64(binary.LittleEndian.Uint64(data[1:9]))
		b := int64(binary.LittleEndian.Uint64(data[9:17]))
		if data[0]&0x80 == 0 { // small: a few ms, so that intervals meet
			off %= 5_000_000
			b = judge.Abs(off) + judge.Abs(b%3_000_000)
		}
		ref := Ref{Source: string(rune('A' + i)), State: st, OffsetNS: off, BoundNS: b, SampleNS: at - int64(data[0]>>4)*1e9}
		if data[0]&0x40 != 0 {
			ref.GrowPPB = int64(data[16]) * 1000 // up to 255 µs/s over up to 15 s
		}
		refs = append(refs, ref)
		data = data[17:]
	}
	return refs
}

func put(b []byte, st byte, off, bound int64) []byte {
	b = append(b, st)
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	return binary.LittleEndian.AppendUint64(b, uint64(bound))
}

// FuzzVote: over random sets of intervals, the vote never panics, and each
// result holds the invariants (checkInvariants: the combined interval inside
// every truechimer's, its bound at most the best truechimer's, the counts)
// and the majority found by brute force over every end point.
func FuzzVote(f *testing.F) {
	var seed []byte
	seed = put(seed, 1, 10_000, 60_000)
	seed = put(seed, 1, -5_000, 45_000)
	seed = put(seed, 1, 5_000_000, 5_050_000)
	f.Add(seed)
	f.Add(put(put(nil, 0x81, 1<<62, 1<<62+50_000), 1, 0, 50_000))
	f.Add(put(put(put(nil, 0x81, 3, math.MaxInt64), 0x82, math.MinInt64, math.MaxInt64-1), 2, -90_000, 10_000))
	f.Add(put(put(put(nil, 1, 0, 1_000_000), 1, -900_000, 950_000), 1, 900_000, 950_000))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := voter(t, Default())
		var r Result
		for k := int64(1); k <= 3; k++ {
			refs := refsFrom(data, k*1e9)
			v.Vote(k*1e9, refs, &r)
			checkInvariants(t, refs, &r)
			checkMajority(t, &r)
		}
	})
}

// checkMajority recomputes the vote's outcome by brute force: the depth of
// every end point, and a tie when two points of the greatest depth are
// covered by different sets of intervals.
func checkMajority(t *testing.T, r *Result) {
	t.Helper()
	depth, tie := 0, false
	var bestSet []bool
	cover := func(p int64) ([]bool, int) {
		set, n := make([]bool, len(r.Refs)), 0
		for i, o := range r.Refs {
			if o.Voting && !o.Bad && o.LoNS <= p && p <= o.HiNS {
				set[i], n = true, n+1
			}
		}
		return set, n
	}
	for _, o := range r.Refs {
		if !o.Voting || o.Bad {
			continue
		}
		for _, p := range []int64{o.LoNS, o.HiNS} {
			set, n := cover(p)
			switch {
			case n > depth:
				depth, bestSet, tie = n, set, false
			case n == depth && !tie:
				for i := range set {
					if set[i] != bestSet[i] {
						tie = true
					}
				}
			}
		}
	}
	want := None
	switch {
	case r.Voting == 1:
		want = Single
	case r.Voting > 1 && depth > 0 && !tie && 2*depth > r.Voting:
		want = Agreed
	case r.Voting > 1:
		want = Disputed
	}
	if r.Status != want {
		t.Fatalf("status %s, brute force %s (depth %d of %d voting, tie %v)", r.Status, want, depth, r.Voting, tie)
	}
	if want == Agreed {
		for i, o := range r.Refs {
			if o.InMajority != bestSet[i] {
				t.Fatalf("%s in majority %v, brute force %v", o.Source, o.InMajority, bestSet[i])
			}
		}
	}
}
