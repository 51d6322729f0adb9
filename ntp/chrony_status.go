package ntp

import (
	"context"
	"net"

	"github.com/facebook/time/ntp/chrony"

	"github.com/monagent/monagent/timebase"
)

// ChronyStatus is one look at chronyd in integer units: times and offsets in
// ns, frequencies in ppb (chronyd's float seconds and ppm, truncated toward
// zero). Each part is a snapshot at the time its replies arrived.
type ChronyStatus struct {
	Tracking   *ChronyTracking // nil when chronyd did not answer
	TrackingNS int64           // REALTIME when the tracking reply arrived
	Sources    []ChronySource  // those answered before any failure
	SourcesNS  int64
	// ServerStats, asked over the command socket only; nil otherwise or when
	// not answered.
	ServerStats   *ServerStats
	ServerStatsNS int64
}

// ChronyTracking is chronyc tracking.
type ChronyTracking struct {
	RefID               uint32
	Reference           net.IP
	Stratum, LeapStatus uint16
	RefTimeNS           int64 // Unix ns of the last update
	// SystemTimeNS is how far chronyd is correcting the system clock (its
	// current correction: chronyc's "System time").
	SystemTimeNS                      int64
	LastOffsetNS, RMSOffsetNS         int64
	FreqPPB, ResidualFreqPPB, SkewPPB int64
	RootDelayNS, RootDispersionNS     int64
	UpdateIntervalNS                  int64
}

// Synced says whether chronyd is synchronised: a reference that is not its
// own local clock (Local), and leap status not 3 (unsynchronised).
func (t *ChronyTracking) Synced() bool { return t.LeapStatus != 3 && t.RefID != 0 && !t.Local() }

// RefIDLocal is the reference id chronyd reports while it serves its own
// clock as the reference (the `local` directive: chronyc tracking says
// "Reference ID : 7F7F0101 ()", with the local stratum and leap status
// normal, and a root dispersion that does not grow).
const RefIDLocal = 0x7F7F0101

// Local says chronyd's reference is its own clock (RefIDLocal): it then
// answers its clients as a server of the local stratum, but the clock it
// disciplines follows nothing.
func (t *ChronyTracking) Local() bool { return t.RefID == RefIDLocal }

// ChronySource is one of chronyd's sources (chronyc sources), with its
// statistics and, over the command socket, its last NTP exchange.
type ChronySource struct {
	Address, State, Mode                            string
	Poll                                            int16
	Stratum, Reachability                           uint16
	SinceSampleS                                    int64 // seconds since its last sample
	OrigLatestMeasNS, LatestMeasNS, LatestMeasErrNS int64
	Stats                                           *ChronySourceStats // nil when chronyd has none yet
	NTP                                             *ChronyNTPData     // nil over UDP, for reference clocks, or when refused
}

// ChronySourceStats is chronyc sourcestats of one source.
type ChronySourceStats struct {
	Samples, Runs, SpanS                  int64
	StdDevNS, EstOffsetNS, EstOffsetErrNS int64
	ResidualFreqPPB, SkewPPB              int64
}

// ChronyNTPData is chronyc ntpdata of one source: its last exchange.
type ChronyNTPData struct {
	OffsetNS, PeerDelayNS, PeerDispersionNS, ResponseTimeNS int64
	JitterAsymmetry                                         float64 // a ratio, -0.5..0.5
	TotalTX, TotalRX, TotalValid                            int64
	// TxTimestamping and RxTimestamping are chronyc's letters for where the
	// last exchange's timestamps came from (D daemon, K kernel, H hardware).
	TxTimestamping, RxTimestamping byte
}

func secNS(v float64) int64  { return int64(v * 1e9) }
func ppmPPB(v float64) int64 { return int64(v * 1e3) }

// Status asks chronyd for tracking, then its sources, then (over the command
// socket) its server statistics, and stops at the first that fails: the
// parts answered before are returned with the error.
func (m *Chrony) Status(ctx context.Context) (ChronyStatus, error) {
	var st ChronyStatus
	tr, err := m.Tracking(ctx)
	if err != nil {
		return st, err
	}
	st.TrackingNS = timebase.RealtimeNS()
	t := trackingOf(tr)
	st.Tracking = &t
	srcs, err := m.Sources(ctx)
	st.SourcesNS = timebase.RealtimeNS()
	for _, s := range srcs {
		st.Sources = append(st.Sources, sourceOf(s))
	}
	if err != nil || !m.Unix() {
		return st, err
	}
	ss, err := m.ServerStats(ctx)
	if err != nil {
		return st, err
	}
	st.ServerStatsNS = timebase.RealtimeNS()
	st.ServerStats = &ss
	return st, nil
}

func trackingOf(tr chrony.Tracking) ChronyTracking {
	return ChronyTracking{
		RefID: tr.RefID, Reference: tr.IPAddr, Stratum: tr.Stratum, LeapStatus: tr.LeapStatus,
		RefTimeNS: tr.RefTime.UnixNano(), SystemTimeNS: secNS(tr.CurrentCorrection),
		LastOffsetNS: secNS(tr.LastOffset), RMSOffsetNS: secNS(tr.RMSOffset),
		FreqPPB: ppmPPB(tr.FreqPPM), ResidualFreqPPB: ppmPPB(tr.ResidFreqPPM), SkewPPB: ppmPPB(tr.SkewPPM),
		RootDelayNS: secNS(tr.RootDelay), RootDispersionNS: secNS(tr.RootDispersion),
		UpdateIntervalNS: secNS(tr.LastUpdateInterval),
	}
}

func sourceOf(s Source) ChronySource {
	d := s.Data
	out := ChronySource{
		Address: d.IPAddr.String(), State: d.State.String(), Mode: d.Mode.String(),
		Poll: d.Poll, Stratum: d.Stratum, Reachability: d.Reachability, SinceSampleS: int64(d.SinceSample),
		OrigLatestMeasNS: secNS(d.OrigLatestMeas), LatestMeasNS: secNS(d.LatestMeas), LatestMeasErrNS: secNS(d.LatestMeasErr),
	}
	if st := s.Stats; st != nil {
		out.Stats = &ChronySourceStats{Samples: int64(st.NSamples), Runs: int64(st.NRuns), SpanS: int64(st.SpanSeconds),
			StdDevNS: secNS(st.StandardDeviation), EstOffsetNS: secNS(st.EstimatedOffset), EstOffsetErrNS: secNS(st.EstimatedOffsetErr),
			ResidualFreqPPB: ppmPPB(st.ResidFreqPPM), SkewPPB: ppmPPB(st.SkewPPM)}
	}
	if nd := s.NTPData; nd != nil {
		out.NTP = &ChronyNTPData{OffsetNS: secNS(nd.Offset), PeerDelayNS: secNS(nd.PeerDelay),
			PeerDispersionNS: secNS(nd.PeerDispersion), ResponseTimeNS: secNS(nd.ResponseTime),
			JitterAsymmetry: nd.JitterAsymmetry, TotalTX: int64(nd.TotalTXCount), TotalRX: int64(nd.TotalRXCount),
			TotalValid: int64(nd.TotalValidCount), TxTimestamping: nd.TXTssChar, RxTimestamping: nd.RXTssChar}
	}
	return out
}
