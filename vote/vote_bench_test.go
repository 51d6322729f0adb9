package vote

import (
	"fmt"
	"testing"
)

// benchRefs is n references, one of them 5 ms off, each with a new sample
// at every vote (the dwell runs at every vote, the costliest case).
func benchRefs(n int) []Ref {
	refs := make([]Ref, n)
	for i := range refs {
		off := int64(i%7-3) * 3 * us
		if i == n-1 {
			off = 5000 * us
		}
		refs[i] = ref(fmt.Sprintf("ntp:10.0.0.%d:123", i+1), L, off, (20+int64(i%5)*7)*us, 0)
	}
	return refs
}

func advance(refs []Ref, at int64) {
	for i := range refs {
		refs[i].SampleNS = at
		refs[i].OffsetNS += at%3 - 1 // jitter, so the sort sees new orders
		refs[i].BoundNS++
	}
}

// A vote allocates nothing once the Voter and the Result are sized.
func TestVoteAllocs(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8, 32} {
		v := voter(t, Default())
		refs := benchRefs(n)
		var r Result
		at := int64(1)
		v.Vote(at, refs, &r) // warm-up: buffers sized
		allocs := testing.AllocsPerRun(1000, func() {
			at++
			advance(refs, at)
			v.Vote(at, refs, &r)
		})
		if allocs != 0 {
			t.Errorf("n=%d: %.1f allocations per vote, want 0", n, allocs)
		}
		switch {
		case n == 2 && (r.Status != Disputed || len(r.Named) != 2),
			n > 2 && (r.Status != Agreed || len(r.Named) != 1):
			t.Errorf("n=%d: %s, named %v: the benchmark's liar is not caught", n, r.Status, r.Named)
		}
	}
}

func BenchmarkVote(b *testing.B) {
	for _, n := range []int{2, 3, 8, 32} {
		b.Run(fmt.Sprintf("refs=%d", n), func(b *testing.B) {
			v := voter(b, Default())
			refs := benchRefs(n)
			var r Result
			v.Vote(0, refs, &r)
			b.ReportAllocs()
			at := int64(0)
			for b.Loop() {
				at++
				advance(refs, at)
				v.Vote(at, refs, &r)
			}
		})
	}
}
