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
