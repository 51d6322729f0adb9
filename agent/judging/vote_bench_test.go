package judging

import (
	"fmt"
	"testing"

	"github.com/monagent/monagent/judge"
)

// BenchmarkCrossCheckSample is the cost a sample of one of n references of
// the system clock pays for the judge and the vote across them (the views
// of the n references, the vote, no verdict changing): the agent's sample
// path, beside BenchmarkVote (package vote) alone.
func BenchmarkCrossCheckSample(b *testing.B) {
	for _, n := range []int{1, 3, 8} {
		b.Run(fmt.Sprintf("refs=%d", n), func(b *testing.B) {
			x := newXbed(b, n)
			for range 5 {
				x.second()
			}
			var nop nopAdder
			at := x.v.mono + x.v.off
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				at++
				x.refs[i%n].Observe(nop, judge.Sample{TimeNS: at, MonoNS: at - x.v.off, Synced: true, OffsetNS: 1000, BoundNS: 21_000, FreqErrPPB: -1})
			}
		})
	}
}
