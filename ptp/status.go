package ptp

import (
	"context"
	"errors"

	"github.com/facebook/time/ptp/protocol"
)

// Status is one look at ptp4l: every dataset the monitor asks for, in
// integer units; each is nil when ptp4l did not answer it.
type Status struct {
	Current          *Current
	Parent           *protocol.ParentDataSetTLV
	TimeStatus       *protocol.TimeStatusNPTLV
	Port             *PortDataSet
	PortStats        *PortStats
	PortServiceStats *protocol.PortServiceStatsNPTLV // nil too once ptp4l said it has none
}

// Following says whether ptp4l follows a master: its port is SLAVE, or
// UNCALIBRATED (a servo not locked yet, or never, as with free_running),
// a grandmaster is present and a path delay has been measured (nothing to
// bound the offset with before it). It needs Current, TimeStatus and Port.
func (s *Status) Following() bool {
	return (s.Port.PortState == protocol.PortStateSlave || s.Port.PortState == protocol.PortStateUncalibrated) &&
		s.TimeStatus.GMPresent != 0 && s.Current.MeanPathDelayNS > 0
}

// Current is CURRENT_DATA_SET in ns (the wire's scaled ns, truncated).
type Current struct {
	OffsetFromMasterNS, MeanPathDelayNS int64
	StepsRemoved                        uint16
}

// PortStats is PORT_STATS_NP: the port's message counters by type.
type PortStats struct {
	Port     protocol.PortIdentity
	Messages []MessageCount
}

// MessageCount is how many messages of one type a port received and sent.
type MessageCount struct {
	Type   string // sync, delay_req, ..., management
	RX, TX uint64
}

// messageTypes are the types PORT_STATS_NP counts, in their order, each with
// its name in MessageCount.
var messageTypes = [...]struct {
	t    protocol.MessageType
	name string
}{
	{protocol.MessageSync, "sync"}, {protocol.MessageDelayReq, "delay_req"},
	{protocol.MessagePDelayReq, "pdelay_req"}, {protocol.MessagePDelayResp, "pdelay_resp"},
	{protocol.MessageFollowUp, "follow_up"}, {protocol.MessageDelayResp, "delay_resp"},
	{protocol.MessagePDelayRespFollowUp, "pdelay_resp_follow_up"}, {protocol.MessageAnnounce, "announce"},
	{protocol.MessageSignaling, "signaling"}, {protocol.MessageManagement, "management"},
}

// MessageCounts names the counters of PORT_STATS_NP, by message type.
func MessageCounts(st protocol.PortStats) []MessageCount {
	out := make([]MessageCount, len(messageTypes))
	for i, mt := range messageTypes {
		out[i] = MessageCount{Type: mt.name, RX: st.RXMsgType[mt.t], TX: st.TXMsgType[mt.t]}
	}
	return out
}

// Status asks for every dataset. Without CURRENT_DATA_SET (asked first)
// it asks for nothing more and returns that error; the others' errors are
// joined and what was answered is returned with them. A ptp4l without
// PORT_SERVICE_STATS_NP (linuxptp 3.x) is not asked for it again, and that
// is no error (ServiceStatsUnsupported).
func (m *Monitor) Status(ctx context.Context) (Status, error) {
	var st Status
	cur, err := m.CurrentDataSet(ctx)
	if err != nil {
		return st, err
	}
	st.Current = &Current{OffsetFromMasterNS: int64(cur.OffsetFromMaster.Nanoseconds()),
		MeanPathDelayNS: int64(cur.MeanPathDelay.Nanoseconds()), StepsRemoved: cur.StepsRemoved}
	var errs []error
	keep := func(err error) bool { errs = append(errs, err); return err == nil }
	if par, err := m.ParentDataSet(ctx); keep(err) {
		st.Parent = par
	}
	if ts, err := m.TimeStatusNP(ctx); keep(err) {
		st.TimeStatus = ts
	}
	if pd, err := m.PortDataSet(ctx); keep(err) {
		st.Port = &pd
	}
	if ps, err := m.PortStatsNP(ctx); keep(err) {
		st.PortStats = &PortStats{Port: ps.PortIdentity, Messages: MessageCounts(ps.PortStats)}
	}
	if !m.ServiceStatsUnsupported.Load() {
		ss, err := m.PortServiceStatsNP(ctx)
		if errors.Is(err, ErrUnsupported) {
			m.ServiceStatsUnsupported.Store(true) // degrade, once
		} else if keep(err) {
			st.PortServiceStats = ss
		}
	}
	return st, errors.Join(errs...)
}
