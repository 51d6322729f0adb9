package status

import (
	"cmp"
	"math"
	"slices"

	"github.com/monagent/monagent/judge"
)

// Doc is the /status document.
type Doc struct {
	Host   string  `json:"host"`
	TimeNS int64   `json:"time_ns"` // when it was made, REALTIME
	Clocks []Clock `json:"clocks"`
	// Reference says what reference this agent is to others, when it is one
	// (HCA rank 0: the global timeline itself, which it does not judge);
	// omitted otherwise.
	Reference string `json:"reference,omitempty"`
}

// Clock is one judged clock in a Doc.
type Clock struct {
	Clock  string `json:"clock"`
	Source string `json:"source"`
	State  string `json:"state"` // UNKNOWN, LOCKED, HOLDOVER, FREERUN
	// SinceNS is when the state was entered, REALTIME ns (0 while UNKNOWN).
	SinceNS  int64 `json:"since_ns"`
	OffsetNS int64 `json:"offset_ns"`
	// ErrorBoundNS is the bound at TimeNS; -1 for none known (no sample).
	ErrorBoundNS int64  `json:"error_bound_ns"`
	LastSampleNS int64  `json:"last_sample_ns"` // 0 for none
	StateChanges uint64 `json:"state_changes"`
	// EventsLost is what the judge did not get: samples due that did not
	// come (timeouts, unanswered polls) and what the source lost on the
	// way (kernel-reported losses, ring drops), where it counts them.
	EventsLost uint64 `json:"events_lost"`
}

// FromViews is the Clocks of views.
func FromViews(views []judge.View) []Clock {
	out := make([]Clock, len(views))
	for i, v := range views {
		b := v.BoundNS
		if b == math.MaxInt64 {
			b = -1
		}
		out[i] = Clock{Clock: v.Clock, Source: v.Source, State: v.State.String(), SinceNS: v.SinceNS, OffsetNS: v.OffsetNS,
			ErrorBoundNS: b, LastSampleNS: v.LastSampleNS, StateChanges: v.Changes, EventsLost: v.Missed}
	}
	return out
}

// Sort orders clocks by clock, then source (as judge.Set.Views).
func Sort(clocks []Clock) {
	slices.SortFunc(clocks, func(a, b Clock) int {
		return cmp.Or(cmp.Compare(a.Clock, b.Clock), cmp.Compare(a.Source, b.Source))
	})
}

// NotLocked is how many judged clocks are not LOCKED: `monagent status`
// exits 0 only when it is 0 and there is a judged clock.
func (d *Doc) NotLocked() int {
	n := 0
	for _, c := range d.Clocks {
		if c.State != judge.Locked.String() {
			n++
		}
	}
	return n
}
