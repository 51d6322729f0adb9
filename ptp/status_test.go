package ptp

import (
	"testing"

	"github.com/facebook/time/ptp/protocol"
)

// TestMessageCounts: PORT_STATS_NP's counters, indexed by message type, come
// out named, in type order, the types PTP does not define left out.
func TestMessageCounts(t *testing.T) {
	var st protocol.PortStats
	for i := range st.RXMsgType {
		st.RXMsgType[i], st.TXMsgType[i] = uint64(100+i), uint64(200+i)
	}
	want := []MessageCount{{"sync", 100, 200}, {"delay_req", 101, 201}, {"pdelay_req", 102, 202}, {"pdelay_resp", 103, 203},
		{"follow_up", 108, 208}, {"delay_resp", 109, 209}, {"pdelay_resp_follow_up", 110, 210}, {"announce", 111, 211},
		{"signaling", 112, 212}, {"management", 113, 213}}
	got := MessageCounts(st)
	if len(got) != len(want) {
		t.Fatalf("%d counts, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("count %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestProbeStatsRejected: the total of every reason.
func TestProbeStatsRejected(t *testing.T) {
	var s ProbeStats
	s.Rejects[RejectShort], s.Rejects[RejectLate] = 2, 5
	if s.Rejected() != 7 {
		t.Fatalf("rejected %d, want 7", s.Rejected())
	}
}

// ptp4l follows a master while its port is SLAVE or UNCALIBRATED, a
// grandmaster is present and a path delay has been measured.
func TestStatusFollowing(t *testing.T) {
	st := func(state protocol.PortState, gm int32, delay int64) *Status {
		return &Status{Current: &Current{MeanPathDelayNS: delay}, TimeStatus: &protocol.TimeStatusNPTLV{GMPresent: gm},
			Port: &PortDataSet{PortState: state}}
	}
	for _, c := range []struct {
		name string
		s    *Status
		want bool
	}{
		{"slave", st(protocol.PortStateSlave, 1, 20_000), true},
		{"uncalibrated (free_running)", st(protocol.PortStateUncalibrated, 1, 20_000), true},
		{"listening", st(protocol.PortStateListening, 1, 20_000), false},
		{"master", st(protocol.PortStateMaster, 1, 20_000), false},
		{"no grandmaster", st(protocol.PortStateSlave, 0, 20_000), false},
		{"no path delay yet", st(protocol.PortStateSlave, 1, 0), false},
	} {
		if got := c.s.Following(); got != c.want {
			t.Errorf("%s: following %v, want %v", c.name, got, c.want)
		}
	}
}
