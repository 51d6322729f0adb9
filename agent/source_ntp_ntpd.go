package agent

import (
	"context"
	"strconv"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/ntp"
	"github.com/monagent/monagent/record"
)

// ntpdSource ships ntpd's system variables and each association's, read over
// NTP mode 6 (ntp.Ntpd), and judges the system clock as ntpd disciplines it.
type ntpdSource struct {
	daemon
	m *ntp.Ntpd
}

func buildNtpdSource(env *Env) ([]collect.Source, error) {
	return buildInstances(&env.Config.NTP.Ntpd, func(key string, c NtpdConfig) ([]collect.Source, error) {
		s := &ntpdSource{m: ntp.NewNtpd(c.Address, env.Config.NTP.Timeout)}
		return one(s, s.ntpDaemon(env, key, "ntpd", c.Instance, c.Interval, c.Judge, s.m))
	})
}

// Collect ships what ntpd answered, each record at the time its reply
// arrived: ntpd_system, then one ntpd_peer per association (tagged with
// its address, selection and association id, so two associations of one
// address stay apart).
func (s *ntpdSource) Collect(ctx context.Context, b *collect.Batch) error {
	st, err := s.m.Status(ctx)
	if sys := st.System; sys != nil {
		f := []record.Field{
			record.Int("leap", sys.Leap), record.Int("stratum", sys.Stratum), record.Int("precision", sys.Precision),
			record.Int("root_delay_ns", sys.RootDelayNS), record.Int("root_dispersion_ns", sys.RootDispNS),
			record.String("reference_id", sys.RefID), record.Int("ref_time_ns", sys.RefTimeNS),
			record.Int("system_peer", int64(sys.SysPeer)), record.Int("offset_ns", sys.OffsetNS),
			record.Int("sys_jitter_ns", sys.SysJitterNS), record.Int("clk_jitter_ns", sys.ClkJitterNS),
			record.Int("freq_ppb", sys.FreqPPB), record.Int("clk_wander_ppb", sys.ClkWanderPPB),
			record.Int("tc", sys.TC), record.Int("mintc", sys.MinTC), record.Int("status_word", int64(sys.Status)),
			record.String("version", sys.Version), record.Int("garbled_variables", int64(sys.Garbled)),
			record.Int("peers_skipped", int64(st.PeersSkipped)),
		}
		if sys.HasTAI {
			f = append(f, record.Int("tai", sys.TAI))
		}
		b.Add("ntpd_system", sys.TimeNS, s.tags, f...)
		// ntpd's offset is the reference's against this host, reference −
		// local (RFC 5905's θ; ntpq: "offset of server relative to this
		// host"): the judged offset is local − reference, as the probe's.
		s.judgeDaemon(b, sys.TimeNS, sys.Synced(), "", -sys.OffsetNS, sys.RootDelayNS, sys.RootDispNS, sys.ClkWanderPPB)
	} else {
		s.unanswered(b, err)
	}
	for _, p := range st.Peers {
		b.Add("ntpd_peer", p.TimeNS,
			withTags(s.tags, record.Tag{Key: "peer", Value: p.Address}, record.Tag{Key: "selection", Value: p.SelectionName},
				record.Tag{Key: "association", Value: strconv.Itoa(int(p.Association))}),
			record.Int("offset_ns", p.OffsetNS), record.Int("delay_ns", p.DelayNS), record.Int("dispersion_ns", p.DispersionNS),
			record.Int("jitter_ns", p.JitterNS), record.Int("reach", p.Reach), record.Int("poll", p.HPoll), record.Int("ppoll", p.PPoll),
			record.Int("stratum", p.Stratum), record.Int("leap", p.Leap), record.Int("precision", p.Precision),
			record.Int("root_delay_ns", p.RootDelayNS), record.Int("root_dispersion_ns", p.RootDispNS),
			record.String("reference_id", p.RefID), record.Int("srcport", p.SrcPort), record.Int("hmode", p.HMode), record.Int("pmode", p.PMode),
			record.Int("unreach", p.Unreach), record.Int("flash", p.Flash), record.Bool("configured", p.Configured),
			record.Bool("reachable", p.Reachable), record.Int("status_word", int64(p.Status)), record.Int("garbled_variables", int64(p.Garbled)))
	}
	return err
}

// SelfFields implements collect.SelfReporter: the monitor's counters, each
// bad reply counted by its kind.
func (s *ntpdSource) SelfFields() []record.Field {
	m := s.m
	return []record.Field{record.Uint("requests", m.Requests.Load()), record.Uint("stale_replies", m.Stale.Load()),
		record.Uint("error_replies", m.ErrorReplies.Load()), record.Uint("truncated_replies", m.Truncated.Load()),
		record.Uint("malformed_replies", m.Malformed.Load()), record.Uint("timeouts", m.Timeouts.Load()),
		record.Uint("garbled_variables", m.Garbled.Load()), record.Uint("reconnects", m.Reconnects.Load())}
}
