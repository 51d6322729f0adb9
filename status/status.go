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
	// Combined is each judged clock's cross-checked answer (issue 35): the
	// vote across its references, one entry per clock, ordered by clock.
	Combined []Combined `json:"combined"`
}

// Combined is the vote across one clock's judged references and the one
// answer it gives (docs/schema.md, /status).
type Combined struct {
	// Clock is the clock voted on: the judged clocks' clock name, but for
	// ptp4l the instance's source (ptp4l:<socket>), as each instance
	// disciplines its own clock.
	Clock string `json:"clock"`
	// State is the combined state: LOCKED when a majority agrees and the
	// combined bound is within the clock's threshold (HOLDOVER when every
	// reference of that majority is in HOLDOVER), FREERUN when disputed,
	// when no reference votes, or when the bound is over the threshold;
	// with one voting reference (not cross-checked) that reference's own
	// state; UNKNOWN before the first vote and while every reference is.
	State string `json:"state"`
	// Vote is the vote's outcome: "agreed", "disputed", "not cross-checked"
	// (one voting reference) or "none" (no reference votes).
	Vote string `json:"vote"`
	// OffsetNS is the midpoint of the interval the agreeing references
	// share; ErrorBoundNS its |midpoint| + half-width, -1 when there is no
	// answer (disputed, none). HalfWidthNS is that interval's half width.
	OffsetNS     int64 `json:"offset_ns"`
	ErrorBoundNS int64 `json:"error_bound_ns"`
	HalfWidthNS  int64 `json:"half_width_ns"`
	// ThresholdNS is the clock's threshold: the smallest of its references'.
	ThresholdNS int64 `json:"threshold_ns"`
	// VotedNS is when the vote behind this answer was taken (REALTIME ns:
	// the time of the sample or judge tick that took it; 0 before the
	// first). A reference whose last_sample_ns is later brought a sample
	// this answer does not hold yet: its vote follows at once.
	VotedNS int64 `json:"voted_ns"`
	// References is how many judged references the clock has, Voting how
	// many voted (LOCKED or HOLDOVER), Agreeing how many are said to agree.
	References int `json:"references"`
	Voting     int `json:"voting"`
	Agreeing   int `json:"agreeing"`
	// Falsetickers names the references outside the majority (or, when
	// disputed, every voting reference named); Absent the ones that do not
	// vote (UNKNOWN, FREERUN). Never null.
	Falsetickers []string `json:"falsetickers"`
	Absent       []string `json:"absent"`
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
	// Agrees is the reference's verdict in its clock's vote: true when it
	// agrees with the majority, false when it is named a falseticker (or
	// the clock is disputed), null when it is not cross-checked (its
	// clock's only voting reference) or does not vote.
	Agrees *bool `json:"agrees"`
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

// NotLocked is how many judged clocks and combined clocks are not LOCKED,
// and how many references are named falsetickers: `monagent status` exits 0
// only when all are 0 and there is a judged clock (docs/schema.md). A
// disputed clock is not LOCKED; a falseticker's own LOCKED is not to be
// believed.
func (d *Doc) NotLocked() (notLocked, combined, falsetickers int) {
	for _, c := range d.Clocks {
		if c.State != judge.Locked.String() {
			notLocked++
		}
		if c.Agrees != nil && !*c.Agrees {
			falsetickers++
		}
	}
	for _, c := range d.Combined {
		if c.State != judge.Locked.String() {
			combined++
		}
	}
	return notLocked, combined, falsetickers
}
