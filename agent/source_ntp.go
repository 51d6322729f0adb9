package agent

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/ntp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// ntpSource ships the probe of one NTP server (ntp.ServerProbe: a name is
// resolved when first polled and again after failures, never fatal; its
// failures counted in resolve_errors). It polls every interval, stretched by
// the server's RATE kisses and backed off while the server does not answer.
// Every sample is shipped at its own T4 (CLOCK_REALTIME; a hardware stamp is
// translated by the prober).
type ntpSource struct {
	cfg      NTPServerConfig
	p        *ntp.ServerProbe
	tags     []record.Tag
	start    time.Time
	lastPoll time.Time
	judged   *judgement // the system clock against this server; nil when not judged
}

// newNTPSource ships the probe of srv (see ntp.NewServerProbe).
// toRealtime moves hardware timestamps to REALTIME (nil without them).
func newNTPSource(sc NTPServerConfig, srv ntp.Server, timeout time.Duration,
	open func(netip.AddrPort) (ntp.Socket, error), toRealtime func(int64) (int64, error)) (*ntpSource, error) {
	p, err := ntp.NewServerProbe(srv, ntp.ProbeConfig{Burst: sc.Burst, BurstSpacing: sc.BurstSpacing, Timeout: timeout,
		Basic: sc.Basic, MaxDelayDevRatio: sc.MaxDelayDevRatio, ToRealtime: toRealtime}, open)
	if err != nil {
		return nil, err
	}
	return &ntpSource{cfg: sc, p: p, tags: []record.Tag{{Key: "server", Value: srv.String()}}, start: time.Now()}, nil
}

func buildNTPSources(env *Env) ([]collect.Source, error) {
	n := env.Config.NTP
	var out []collect.Source
	var toRealtime func(int64) (int64, error)
	if n.Timestamping == "hardware" {
		dom, err := hardwarePHC("ntp.interface", n.Interface)
		if err != nil {
			return nil, err
		}
		toRealtime = env.Translators.ToRealtime(dom)
	}
	open := func(addr netip.AddrPort) (ntp.Socket, error) {
		conn, err := ntp.Listen(addr, sockts.Options{Hardware: n.Timestamping == "hardware", Interface: n.Interface, TxWait: n.TxWait})
		if err != nil {
			return nil, err
		}
		if opt, why := conn.Option(); why != nil {
			env.Log.Warn("no kernel packet timestamps: NTP samples use user-space timestamps", "server", addr, "option", opt, "reason", why)
		}
		return conn, nil
	}
	for i, sc := range n.Servers {
		srv, err := ntp.ParseServer(sc.Address) // config check refused what does not parse
		if err != nil {
			return nil, keyErr(fmt.Sprintf("ntp.servers[%d].address", i), "%v", err)
		}
		s, err := newNTPSource(sc, srv, n.Timeout, open, toRealtime)
		if err == nil {
			// A failed poll says the reference is lost; a source quiet for
			// four intervals (an interleaved sample completes a poll late)
			// has lost it too.
			s.judged, err = env.judges.Add("system", s.Name(), n.Judge, 4*sc.Interval+2*n.Timeout)
		}
		if err != nil {
			closeSources(out)
			return nil, keyErr(fmt.Sprintf("ntp.servers[%d]", i), "%v", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// closeSources closes sources built before a later one failed.
func closeSources(srcs []collect.Source) {
	for _, s := range srcs {
		s.Close()
	}
}

func (s *ntpSource) Name() string            { return "ntp:" + s.p.Server().String() }
func (s *ntpSource) Interval() time.Duration { return time.Second }
func (s *ntpSource) Close() error            { return s.p.Close() }

// Collect polls when the (stretched) interval has passed. Each sample is one
// ntp_sample record at its own T4; ntp_probe is at the kept sample's T4 (at
// the time of the failure when the poll got none).
func (s *ntpSource) Collect(ctx context.Context, b *collect.Batch) error {
	// Half a tick of slack: a tick that comes a little early must not
	// push the poll a whole tick later.
	if !s.lastPoll.IsZero() && time.Since(s.lastPoll) < s.p.Wait(s.cfg.Interval)-s.Interval()/2 {
		return collect.ErrNoData
	}
	s.lastPoll = time.Now()
	if err := s.p.Prepare(ctx); err != nil {
		return err // no address yet: no probe to record
	}
	res, err := s.p.Poll(ctx)
	if err != nil {
		now := timebase.RealtimeNS()
		s.probeRecord(b, now, nil)
		s.judged.Missed(b, now)
		return err
	}
	for i, smp := range res.Samples {
		b.Add("ntp_sample", smp.T4, s.sampleTags(smp),
			record.Int("offset_ns", smp.OffsetNS), record.Int("delay_ns", smp.DelayNS),
			record.Int("t1_ns", smp.T1), record.Int("t2_ns", smp.T2), record.Int("t3_ns", smp.T3), record.Int("t4_ns", smp.T4),
			record.Bool("kept", i == res.Best), record.Bool("delay_outlier", smp.DelayOutlier), record.Bool("mixed", smp.Mixed))
	}
	best := res.Samples[res.Best]
	s.probeRecord(b, best.T4, &best)
	// A delay outlier is judged too: its larger bound still holds.
	h := best.Header
	s.judged.Observe(b, judge.Sample{TimeNS: best.T4, Synced: h.Synced(),
		OffsetNS: best.OffsetNS, BoundNS: judge.Exchange(best.OffsetNS, best.DelayNS, h.RootDelayNS, h.RootDispNS, best.DispersionNS),
		FreqErrPPB: -1})
	return nil
}

func (s *ntpSource) sampleTags(smp ntp.Sample) []record.Tag {
	return append(append([]record.Tag{}, s.tags...), record.Tag{Key: "mode", Value: smp.Mode()},
		record.Tag{Key: "timestamps", Value: smp.TxSource.String() + "/" + smp.RxSource.String()})
}

// probeRecord ships the poll's kept sample (if any) with the probe's counters.
func (s *ntpSource) probeRecord(b *collect.Batch, now int64, best *ntp.Sample) {
	c := &s.p.Prober().C
	elapsed := time.Since(s.start).Seconds()
	fields := []record.Field{
		record.Uint("requests", c.Requests.Load()), record.Uint("replies", c.Replies.Load()), record.Uint("timeouts", c.Timeouts.Load()),
		record.Uint("bytes_sent", c.BytesSent.Load()), record.Uint("bytes_received", c.BytesReceived.Load()),
		record.Float("bytes_per_s", float64(c.BytesSent.Load()+c.BytesReceived.Load())/max(elapsed, 1)),
		record.Uint("interleaved", c.Interleaved.Load()), record.Uint("delay_outliers", c.DelayOutliers.Load()),
		record.Uint("kiss_rate", c.KissRate.Load()), record.Uint("kiss_deny", c.KissDeny.Load()),
		record.Uint("repeats", c.Repeats.Load()), record.Uint("untranslated", c.Untranslated.Load()),
		record.Int("rate_factor", int64(s.p.Prober().RateFactor())),
		record.String("address", s.p.Addr().String()),
	}
	for r := ntp.RejectShort; r < ntp.NumRejects; r++ {
		fields = append(fields, record.Uint("rejected_"+r.String(), c.Rejects[r].Load()))
	}
	tags := s.tags
	if best != nil {
		h := best.Header
		tags = s.sampleTags(*best)
		fields = append(fields,
			record.Int("offset_ns", best.OffsetNS), record.Int("delay_ns", best.DelayNS), record.Int("dispersion_ns", best.DispersionNS),
			record.Int("stratum", int64(h.Stratum)), record.Int("leap", int64(h.Leap)), record.String("refid", h.RefIDString()),
			record.Int("root_delay_ns", h.RootDelayNS), record.Int("root_dispersion_ns", h.RootDispNS),
			record.Int("poll", int64(h.Poll)), record.Int("precision", int64(h.Precision)),
			record.Int("server_processing_ns", best.T3-best.T2), record.Bool("delay_outlier", best.DelayOutlier), record.Bool("mixed", best.Mixed),
		)
	}
	b.Add("ntp_probe", now, tags, fields...)
}

// SelfFields implements collect.SelfReporter.
func (s *ntpSource) SelfFields() []record.Field {
	opt, untranslated := "none", uint64(0)
	if conn := s.p.Socket(); conn != nil {
		opt, _ = conn.Option()
		untranslated = s.p.Prober().C.Untranslated.Load()
	}
	return []record.Field{record.String("timestamping", opt), record.Int("consecutive_failures", s.p.Failures()),
		record.Uint("untranslated", untranslated), record.Uint("resolves", s.p.Resolves.Load()), record.Uint("resolve_errors", s.p.ResolveErrors.Load())}
}

// chronySource ships chronyd's tracking, sources and (over the command socket)
// server statistics.
type chronySource struct {
	daemon // its judged clock: the system clock as chronyd disciplines it
	m      *ntp.Chrony
}

func buildChronySource(env *Env) ([]collect.Source, error) {
	return buildInstances(&env.Config.NTP.Chrony, func(key string, c ChronyConfig) ([]collect.Source, error) {
		// The client socket goes in the agent's runtime directory: chronyd
		// must be able to answer into it (see ntp.Chrony).
		s := &chronySource{m: ntp.NewChrony(c.target(), env.Config.Paths.Runtime(), env.Config.NTP.Timeout)}
		return one(s, s.ntpDaemon(env, key, "chrony", c.Instance, c.Interval, c.Judge, s.m))
	})
}

// Collect ships chronyd's state as it answers: each record is a snapshot at
// the time its reply arrived. chrony_source records of one collection share
// that time and differ by their source tag (chronyd holds one source per
// address).
func (s *chronySource) Collect(ctx context.Context, b *collect.Batch) error {
	st, err := s.m.Status(ctx)
	if tr := st.Tracking; tr != nil {
		b.Add("chrony_tracking", st.TrackingNS, s.tags,
			record.String("reference_id", fmt.Sprintf("%08X", tr.RefID)), record.String("reference", tr.Reference.String()),
			record.Int("stratum", int64(tr.Stratum)), record.Int("leap_status", int64(tr.LeapStatus)), record.Int("ref_time_ns", tr.RefTimeNS),
			record.Int("system_time_ns", tr.SystemTimeNS), record.Int("last_offset_ns", tr.LastOffsetNS), record.Int("rms_offset_ns", tr.RMSOffsetNS),
			record.Int("freq_ppb", tr.FreqPPB), record.Int("residual_freq_ppb", tr.ResidualFreqPPB), record.Int("skew_ppb", tr.SkewPPB),
			record.Int("root_delay_ns", tr.RootDelayNS), record.Int("root_dispersion_ns", tr.RootDispersionNS),
			record.Int("update_interval_ns", tr.UpdateIntervalNS))
		var why judge.Reason
		if tr.Local() {
			// Its own clock as the reference: it serves time at its
			// local stratum, but this clock follows nothing.
			why = judge.ReasonLocalReference
		}
		// chronyd's System time is its correction, reference − local
		// (positive: the clock is slow, chronyc's "slow of NTP time"): the
		// judged offset is local − reference, as the probe's.
		s.judgeDaemon(b, st.TrackingNS, tr.Synced(), why, -tr.SystemTimeNS, tr.RootDelayNS, tr.RootDispersionNS, tr.SkewPPB)
	} else {
		s.unanswered(b, err)
	}
	for _, src := range st.Sources {
		f := []record.Field{
			record.Int("poll", int64(src.Poll)), record.Int("stratum", int64(src.Stratum)), record.Int("reachability", int64(src.Reachability)),
			record.Int("since_sample_s", src.SinceSampleS), record.Int("orig_latest_meas_ns", src.OrigLatestMeasNS),
			record.Int("latest_meas_ns", src.LatestMeasNS), record.Int("latest_meas_err_ns", src.LatestMeasErrNS),
		}
		if ss := src.Stats; ss != nil {
			f = append(f, record.Int("samples", ss.Samples), record.Int("runs", ss.Runs), record.Int("span_s", ss.SpanS),
				record.Int("std_dev_ns", ss.StdDevNS), record.Int("est_offset_ns", ss.EstOffsetNS), record.Int("est_offset_err_ns", ss.EstOffsetErrNS),
				record.Int("residual_freq_ppb", ss.ResidualFreqPPB), record.Int("skew_ppb", ss.SkewPPB))
		}
		if nd := src.NTP; nd != nil {
			f = append(f, record.Int("offset_ns", nd.OffsetNS), record.Int("peer_delay_ns", nd.PeerDelayNS),
				record.Int("peer_dispersion_ns", nd.PeerDispersionNS), record.Int("response_time_ns", nd.ResponseTimeNS),
				record.Float("jitter_asymmetry", nd.JitterAsymmetry), record.Int("total_tx", nd.TotalTX), record.Int("total_rx", nd.TotalRX),
				record.Int("total_valid", nd.TotalValid), record.String("tx_timestamping", string(rune(nd.TxTimestamping))),
				record.String("rx_timestamping", string(rune(nd.RxTimestamping))))
		}
		b.Add("chrony_source", st.SourcesNS, withTags(s.tags, record.Tag{Key: "source", Value: src.Address}, record.Tag{Key: "state", Value: src.State}, record.Tag{Key: "mode", Value: src.Mode}), f...)
	}
	if ss := st.ServerStats; ss != nil {
		b.Add("chrony_serverstats", st.ServerStatsNS, s.tags,
			record.Uint("ntp_hits", ss.NTPHits), record.Uint("ntp_drops", ss.NTPDrops), record.Uint("cmd_hits", ss.CMDHits), record.Uint("cmd_drops", ss.CMDDrops),
			record.Uint("log_drops", ss.LogDrops), record.Uint("nke_hits", ss.NKEHits), record.Uint("ntp_auth_hits", ss.NTPAuthHits),
			record.Uint("ntp_interleaved_hits", ss.NTPInterleavedHits), record.Uint("ntp_timestamps", ss.NTPTimestamps))
	}
	return err
}

// SelfFields implements collect.SelfReporter.
func (s *chronySource) SelfFields() []record.Field {
	return []record.Field{record.Uint("reconnects", s.m.Reconnects.Load())}
}

// ntpSection is the ntp section's entry in the table (config.go): the own
// probe of each server, the chronyd monitor and the ntpd monitor
// (source_ntp_ntpd.go).
var ntpSection = section{key: "ntp", of: func(c *Config) sectionConfig { return &c.NTP },
	sources: []sourceKind{
		{"ntp", func(c *Config) bool { return c.NTP.Enabled && len(c.NTP.Servers) > 0 }, buildNTPSources},
		{"chrony", func(c *Config) bool { return c.NTP.Enabled && c.NTP.Chrony.On() }, buildChronySource},
		{"ntpd", func(c *Config) bool { return c.NTP.Enabled && c.NTP.Ntpd.On() }, buildNtpdSource},
	}}
