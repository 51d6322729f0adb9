package status

import (
	"encoding/json"
	"time"

	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/notify"
)

// StateChangeType is the CloudEvents type of a judged clock's state change.
const StateChangeType = "io.monagent.sync-state.v1"

// StateChange is the data of a state change's CloudEvent (docs/schema.md,
// sync_state).
type StateChange struct {
	Clock    string `json:"clock"`
	Source   string `json:"source"`
	From     string `json:"from"`
	To       string `json:"to"`
	Reason   string `json:"reason"`
	OffsetNS int64  `json:"offset_ns"`
	BoundNS  int64  `json:"bound_ns"`
	TimeNS   int64  `json:"time_ns"`
}

// StateChangeEvent is the CloudEvent of host's clock changing state by tr,
// dated t (the transition's time, moved off its predecessor's if need be);
// seq makes its id unique for the host.
func StateChangeEvent(host string, seq uint64, clock, source string, tr judge.Transition, t int64) notify.Event {
	data, _ := json.Marshal(StateChange{clock, source, tr.From.String(), tr.To.String(), string(tr.Reason), tr.OffsetNS, tr.BoundNS, t})
	return notify.Event{ID: notify.ID(t, seq), Source: "monagent://" + host, Type: StateChangeType,
		Subject: clock + "/" + source, Time: time.Unix(0, t).UTC(), Data: data}
}

// ReferenceCheckType is the CloudEvents type of a change of a reference's
// verdict in its clock's vote.
const ReferenceCheckType = "io.monagent.reference-check.v1"

// ReferenceCheck is the data of a reference check's CloudEvent
// (docs/schema.md, reference_check).
type ReferenceCheck struct {
	Clock  string `json:"clock"`
	Source string `json:"source"`
	// From and To are the verdicts: "absent", "not cross-checked",
	// "agrees", "falseticker", "disputed".
	From string `json:"from"`
	To   string `json:"to"`
	// Vote is the clock's vote: "agreed", "disputed", "not cross-checked",
	// "none".
	Vote     string `json:"vote"`
	OffsetNS int64  `json:"offset_ns"` // the reference's
	BoundNS  int64  `json:"bound_ns"`  // the reference's
	// CombinedOffsetNS and CombinedBoundNS are the clock's combined answer,
	// CombinedBoundNS -1 for none (disputed, none).
	CombinedOffsetNS int64 `json:"combined_offset_ns"`
	CombinedBoundNS  int64 `json:"combined_bound_ns"`
	References       int   `json:"references"`
	Voting           int   `json:"voting"`
	Agreeing         int   `json:"agreeing"`
	TimeNS           int64 `json:"time_ns"`
}

// ReferenceCheckEvent is the CloudEvent of host's reference changing its
// verdict as rc says, dated rc.TimeNS; seq makes its id unique for the host.
func ReferenceCheckEvent(host string, seq uint64, rc ReferenceCheck) notify.Event {
	data, _ := json.Marshal(rc)
	return notify.Event{ID: notify.ID(rc.TimeNS, seq), Source: "monagent://" + host, Type: ReferenceCheckType,
		Subject: rc.Clock + "/" + rc.Source, Time: time.Unix(0, rc.TimeNS).UTC(), Data: data}
}
