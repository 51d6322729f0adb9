package agent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// ptp4lSource ships ptp4l's datasets through its management socket, each at
// the time they were asked for.
type ptp4lSource struct {
	daemon // its judged clock: the clock ptp4l disciplines, against its grandmaster
	m      *ptp.Monitor
}

func buildPtp4lSource(env *Env) ([]collect.Source, error) {
	return buildInstances(&env.Config.PTP.Ptp4l, func(key string, c Ptp4lConfig) ([]collect.Source, error) { return buildPtp4lInstance(env, key, c) })
}

// buildPtp4lInstance builds the sources of one ptp4l: the monitor, its
// pushed events and its slave event monitor.
func buildPtp4lInstance(env *Env, key string, c Ptp4lConfig) ([]collect.Source, error) {
	s := &ptp4lSource{m: ptp.NewMonitor(c.Socket, uint8(c.Domain), c.Timeout)}
	s.m.BindIn(env.Config.Paths.Runtime()) // ptp4l answers into the agent's runtime directory
	var err error
	// With software timestamping ptp4l disciplines the system clock (its
	// master_offset is REALTIME against the grandmaster): it votes with the
	// system clock's other references. With hardware timestamping it
	// disciplines its PHC, a clock of its own (voteClock).
	source := "ptp4l:" + c.Socket
	voting := judging.VoteClock("ptp4l", source)
	if c.Timestamping == "software" {
		voting = "system"
	}
	if s.daemon, err = newDaemon(env, key, "ptp4l", c.Name, c.Interval, s.m, "ptp4l", voting, source, c.Judge, 2*c.Interval+c.Timeout); err != nil {
		return nil, err
	}
	name := s.name
	srcs := []collect.Source{s}
	if c.Subscribe {
		// Pushed events are shipped once a second, at their own times.
		d := newPtp4lPush(c, env.Config.Paths.Runtime())
		d.tags = s.tags
		push, err := collect.Decode(strings.Replace(name, "ptp4l", "ptp4l_push", 1), time.Second, 256, d)
		if err != nil {
			return srcs, err
		}
		srcs = append(srcs, push)
	}
	if c.EventMonitor != "" {
		// ptp4l's clock: with hardware timestamping its interface's PHC,
		// whose stamps the phc source's model moves to REALTIME.
		dom := timebase.DomainRealtime
		if c.Timestamping == "hardware" {
			if dom, err = hardwarePHC(key+".interface", c.Interface); err != nil {
				return srcs, err
			}
			if !env.Config.PHC.Enabled && env.Log != nil {
				env.Log.Warn("the ptp4l event monitor needs the phc source's model of ptp4l's PHC: every Sync and Delay_Req will count as untranslated", "interface", c.Interface)
			}
		}
		// Bound now: a path in use is refused at start, naming the key.
		l, err := ptp.ListenSlaveEvents(c.EventMonitor)
		if err != nil {
			return srcs, keyErr(key+".event_monitor", "%v", err)
		}
		d := newPtp4lSlaveEvents(l, c.DelayFilterLength, dom, env.translators())
		d.inst = s.tags
		ev, err := collect.Decode(strings.Replace(name, "ptp4l", "ptp4l_slave_events", 1), time.Second, 0, d)
		if err != nil {
			l.Close()
			return srcs, err
		}
		srcs = append(srcs, ev)
	}
	return srcs, nil
}

func (s *ptp4lSource) Collect(ctx context.Context, b *collect.Batch) error {
	now := timebase.RealtimeNS()
	st, err := s.m.Status(ctx)
	if cur := st.Current; cur != nil {
		b.Add("ptp4l_current", now, s.tags, record.Int("offset_from_master_ns", cur.OffsetFromMasterNS),
			record.Int("mean_path_delay_ns", cur.MeanPathDelayNS), record.Int("steps_removed", int64(cur.StepsRemoved)))
	}
	if par := st.Parent; par != nil {
		b.Add("ptp4l_parent", now, s.tags, parentFields(par)...)
	}
	if ts := st.TimeStatus; ts != nil {
		b.Add("ptp4l_time_status", now, s.tags, timeStatusFields(ts)...)
	}
	if pd := st.Port; pd != nil {
		b.Add("ptp4l_port", now, withTags(s.tags, record.Tag{Key: "port", Value: pd.PortIdentity.String()}),
			record.String("port_state", pd.PortState.String()), record.Int("port_state_code", int64(pd.PortState)),
			record.Int("log_sync_interval", int64(pd.LogSyncInterval)), record.Int("log_announce_interval", int64(pd.LogAnnounceInterval)),
			record.Int("log_min_delay_req_interval", int64(pd.LogMinDelayReqInterval)), record.Int("delay_mechanism", int64(pd.DelayMechanism)),
			record.Int("peer_mean_path_delay_ns", pd.PeerMeanPathDelayNS))
	}
	if ps := st.PortStats; ps != nil {
		f := make([]record.Field, 0, 2*len(ps.Messages))
		for _, c := range ps.Messages {
			f = append(f, record.Uint("rx_"+c.Type, c.RX), record.Uint("tx_"+c.Type, c.TX))
		}
		b.Add("ptp4l_port_stats", now, withTags(s.tags, record.Tag{Key: "port", Value: ps.Port.String()}), f...)
	}
	if ss := st.PortServiceStats; ss != nil {
		v := ss.PortServiceStats
		b.Add("ptp4l_port_service_stats", now, withTags(s.tags, record.Tag{Key: "port", Value: ss.PortIdentity.String()}),
			record.Uint("announce_timeout", v.AnnounceTimeout), record.Uint("sync_timeout", v.SyncTimeout),
			record.Uint("delay_timeout", v.DelayTimeout), record.Uint("sync_mismatch", v.SyncMismatch),
			record.Uint("followup_mismatch", v.FollowupMismatch))
	}
	s.judge(b, now, st)
	return err
}

// parentFields are PARENT_DATA_SET's, polled (ptp4l_parent) or pushed
// (ptp4l_parent_event, which adds the sequence).
func parentFields(par *protocol.ParentDataSetTLV, more ...record.Field) []record.Field {
	q := par.GrandmasterClockQuality
	return append([]record.Field{
		record.String("parent_port", par.ParentPortIdentity.String()), record.String("grandmaster", par.GrandmasterIdentity.String()),
		record.Int("gm_priority1", int64(par.GrandmasterPriority1)), record.Int("gm_priority2", int64(par.GrandmasterPriority2)),
		record.Int("gm_clock_class", int64(q.ClockClass)), record.Int("gm_clock_accuracy", int64(q.ClockAccuracy)),
		record.Int("gm_offset_scaled_log_variance", int64(q.OffsetScaledLogVariance))}, more...)
}

// timeStatusFields are TIME_STATUS_NP's, polled (ptp4l_time_status) or
// pushed (ptp4l_time_sync, which adds the sequence).
func timeStatusFields(ts *protocol.TimeStatusNPTLV, more ...record.Field) []record.Field {
	return append([]record.Field{
		record.Int("master_offset_ns", ts.MasterOffsetNS), record.Int("ingress_time_ns", ts.IngressTimeNS),
		record.Int("cumulative_scaled_rate_offset", int64(ts.CumulativeScaledRateOffset)),
		record.Bool("gm_present", ts.GMPresent != 0), record.String("gm_identity", ts.GMIdentity.String())}, more...)
}

// judge feeds what ptp4l said at now: synchronised while it follows a
// master (ptp.Status.Following), the bound then deciding; bound |master
// offset| + mean path delay
// (judge.PathDelay), the offset of the last Sync as TIME_STATUS_NP gives it
// (CURRENT_DATA_SET's stays 0 when ptp4l runs free). ptp4l
// not answering is a missed sample.
func (s *ptp4lSource) judge(b *collect.Batch, now int64, st ptp.Status) {
	cur, ts := st.Current, st.TimeStatus
	if cur == nil || ts == nil || st.Port == nil {
		s.judged.Missed(b, now)
		return
	}
	s.judged.Observe(b, judge.Sample{TimeNS: now, Synced: st.Following(), OffsetNS: ts.MasterOffsetNS,
		BoundNS: judge.PathDelay(ts.MasterOffsetNS, cur.MeanPathDelayNS, 0), FreqErrPPB: -1})
}

// SelfFields implements collect.SelfReporter.
func (s *ptp4lSource) SelfFields() []record.Field {
	return []record.Field{record.Uint("foreign_replies", s.m.Foreign.Load()), record.Uint("management_errors", s.m.Errors.Load()),
		record.Uint("reconnects", s.m.Reconnects.Load()), record.Bool("port_service_stats_unsupported", s.m.ServiceStatsUnsupported.Load())}
}

// ptpProbe is the decoder of the PTP delay-request probe's event source: the
// probe (its Run is the producer, under the agent's context) puts every
// exchange into the ring, and each collection ships one ptp_probe record per
// exchange at the exchange's own time, then one ptp_probe_stats record.
type ptpProbe struct {
	p     *ptp.Probe
	start time.Time
	// times keeps ptp_probe records apart (collection goroutine only),
	// bumps counts how often an exchange was moved by a nanosecond.
	times  record.SeriesTime
	bumps  uint64
	judged *judgement // the system clock against the master; nil when not judged
}

func buildPTPProbe(env *Env) ([]collect.Source, error) {
	c := env.Config.PTP.Probe
	var master netip.Addr
	if c.Master != "" {
		master = netip.MustParseAddr(c.Master)
	}
	hw := c.Timestamping == "hardware"
	var dom timebase.Domain
	if hw {
		var err error
		if dom, err = hardwarePHC("ptp.probe.interface", c.Interface); err != nil {
			return nil, err
		}
	}
	var p *ptp.Probe
	var err error
	if c.Transport == "l2" {
		p, err = ptp.ListenL2(ptp.L2Config{Interface: c.Interface, Domain: uint8(c.Domain), TxWait: c.TxWait, Hardware: hw})
	} else {
		p, err = ptp.ListenUDP(ptp.UDPConfig{Interface: c.Interface, Master: master, Domain: uint8(c.Domain), TxWait: c.TxWait, Hardware: hw})
	}
	if err != nil {
		return nil, keyErr("ptp.probe", "%v", err)
	}
	if hw {
		p.Translate = env.Translators.ToRealtime(dom)
	}
	// A Sync a second: three seconds without one lose the master.
	judged, err := env.judges.Add("system", "ptp_probe:"+c.Interface, c.Judge, 3*time.Second)
	var s *collect.EventSource[ptp.Exchange]
	if err == nil {
		s, err = newPTPProbeSource(p, 0, nil, judged)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	// The judge's events_lost: exchanges the ring could not hold.
	judged.CountLost(s.RingDropped)
	return []collect.Source{s}, nil
}

// newPTPProbeSource is the probe's event source; nothing runs until its Run.
// The producer is the probe's Run unless one is given (tests), the ring
// holds ring exchanges (0: the event source's default).
func newPTPProbeSource(p *ptp.Probe, ring int, prod collect.Producer[ptp.Exchange], judged *judgement) (*collect.EventSource[ptp.Exchange], error) {
	d := &ptpProbe{p: p, start: time.Now(), judged: judged}
	if prod == nil {
		prod = collect.ProducerFunc[ptp.Exchange](func(ctx context.Context, q *collect.EventQueue[ptp.Exchange]) error {
			// The ring counts what it cannot take (ring_dropped): the probe
			// never waits on the shipper.
			return p.Run(ctx, func(ex *ptp.Exchange) { q.Put1(*ex) })
		})
	}
	return collect.NewEventSource(collect.EventSourceConfig[ptp.Exchange]{
		Name: "ptp_probe", Interval: time.Second, Ring: ring,
		Producer: prod, Emit: d.emit, After: d.stats, Close: p.Close, Self: d.self,
	})
}

// emit ships one exchange at its own time: t2, the Sync's receive timestamp,
// in REALTIME (a hardware one translated by the probe). The key is
// ptp_probe + host, master, timestamps + t2, and no two exchanges share it:
// the Slave completes each Sync at most once, and every Sync is a frame of
// its own, stamped by the kernel on the one event socket at its own
// nanosecond, Syncs a sync interval apart. Should a clock coarser than a
// nanosecond ever stamp two alike, the later is moved by one nanosecond
// (counted in time_bumps); t2_ns keeps the stamp as it was.
func (d *ptpProbe) emit(b *collect.Batch, ex *ptp.Exchange) {
	t := d.times.Next(ex.T2, &d.bumps)
	f := []record.Field{record.Int("offset_ns", ex.OffsetNS), record.Int("path_delay_ns", ex.PathDelayNS), record.Int("delay_ns", ex.DelayNS),
		record.Int("seq", int64(ex.Seq)), record.Int("t1_ns", ex.T1), record.Int("t2_ns", ex.T2),
		record.Int("correction_ns", ex.CorrSyncNS), record.Bool("sync_outlier", ex.SyncOutlier), record.Bool("delay_outlier", ex.DelayOutlier)}
	if ex.Filtered {
		f = append(f, record.Int("filtered_offset_ns", ex.FilteredOffsetNS), record.Int("filtered_path_delay_ns", ex.FilteredPathDelayNS))
	}
	b.Add("ptp_probe", t, []record.Tag{{Key: "master", Value: ex.Master.String()}, {Key: "timestamps", Value: ex.SyncSource.String() + "/" + ex.DelaySource.String()}}, f...)
	d.judged.Observe(b, judge.Sample{TimeNS: ex.T2, Synced: true, OffsetNS: ex.OffsetNS,
		BoundNS: judge.FilteredDelay(ex.OffsetNS, ex.PathDelayNS, ex.DelayNS), FreqErrPPB: -1})
}

// stats ships the probe's state once per collection, at the collection's
// time: it describes that moment (one record per collection, so none
// collides).
func (d *ptpProbe) stats(b *collect.Batch, events int) error {
	now, err := timebase.Realtime.Now()
	if err != nil {
		return fmt.Errorf("ptp probe: %w", err)
	}
	p := d.p
	elapsed := max(time.Since(d.start).Seconds(), 1)
	st := p.Stats()
	f := []record.Field{
		record.String("transport", p.Transport), record.Uint("dropped_frames", p.Dropped.Load()),
		record.Uint("bytes_sent", p.BytesSent.Load()), record.Uint("bytes_received", p.BytesReceived.Load()),
		record.Float("bytes_sent_per_s", float64(p.BytesSent.Load())/elapsed),
		record.Float("bytes_received_per_s", float64(p.BytesReceived.Load())/elapsed),
		record.Uint("master_changes", st.MasterChanges), record.Int("measurements", int64(events)),
		record.Uint("rx_software", p.RxSources[sockts.SourceSoftware].Load()), record.Uint("rx_user", p.RxSources[sockts.SourceUser].Load()),
		record.Uint("rx_hardware", p.RxSources[sockts.SourceHardware].Load()),
		record.Uint("tx_software", p.TxSources[sockts.SourceSoftware].Load()), record.Uint("tx_user", p.TxSources[sockts.SourceUser].Load()),
		record.Uint("tx_hardware", p.TxSources[sockts.SourceHardware].Load()), record.Uint("untranslated", p.Untranslated.Load()),
		record.Uint("delay_req_timeouts", st.DelayTimeouts), record.Uint("delay_req_no_t3", st.DelayNoT3),
		record.Uint("send_errors", p.SendErrors.Load()), record.Uint("socket_read_errors", p.ReadErrors.Load()),
	}
	for r := ptp.RejectShort; r < ptp.NumRejects; r++ {
		f = append(f, record.Uint("rejected_"+r.String(), st.Rejects[r]))
	}
	if st.HaveMaster {
		b.Add("ptp_probe_stats", now, []record.Tag{{Key: "master", Value: st.Master.Port.String()}}, f...)
	} else {
		b.Add("ptp_probe_stats", now, nil, f...)
	}
	return nil
}

// self is the probe's own losses, beside the event source's counts (events,
// ring_dropped, ...): every message or exchange it could not use.
func (d *ptpProbe) self() []record.Field {
	p := d.p
	st := p.Stats()
	return []record.Field{
		record.Uint("exchanges", p.Exchanges.Load()), record.Uint("dropped_frames", p.Dropped.Load()),
		record.Uint("untranslated", p.Untranslated.Load()), record.Uint("rejected", st.Rejected()),
		record.Uint("delay_req_timeouts", st.DelayTimeouts), record.Uint("delay_req_no_t3", st.DelayNoT3),
		record.Uint("send_errors", p.SendErrors.Load()), record.Uint("socket_read_errors", p.ReadErrors.Load()),
		record.Uint("time_bumps", d.bumps),
	}
}

// ptpSection is the ptp section's entry in the table (config.go): the ptp4l
// monitor and the own probe.
var ptpSection = section{key: "ptp", of: func(c *Config) sectionConfig { return &c.PTP },
	sources: []sourceKind{
		{"ptp4l", func(c *Config) bool { return c.PTP.Enabled && c.PTP.Ptp4l.On() }, buildPtp4lSource},
		{"ptp_probe", func(c *Config) bool { return c.PTP.Enabled && c.PTP.Probe.Enabled }, buildPTPProbe},
	},
	memory: []memoryUse{{what: "exchanges", bytes: ptpExchangeBytes, size: func() uintptr { return unsafe.Sizeof(ptp.Exchange{}) },
		buffers: func(c *Config) []buffer {
			return oneBuffer(c.PTP.Enabled && c.PTP.Probe.Enabled, "ptp.probe", ptpProbeRing)
		}}}}

// The PTP probe's ring: its entries (the event source's default) and an
// entry's budget (the memory check).
const (
	ptpProbeRing     = 4096
	ptpExchangeBytes = 128
)
