package phc

import (
	"testing"

	"github.com/monagent/monagent/timebase"
)

func TestReadsAgainst(t *testing.T) {
	for d, want := range map[timebase.Domain]bool{
		timebase.DomainRealtime: true, timebase.DomainMonotonic: true, timebase.DomainMonotonicRaw: true,
		timebase.DomainTAI: false, timebase.DomainBoottime: false, timebase.PHC(0): false, timebase.DomainUnknown: false,
	} {
		if ReadsAgainst(d) != want {
			t.Errorf("%v: %v", d, !want)
		}
	}
}
