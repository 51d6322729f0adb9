package agent

import (
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/ptp"
)

// PTPConfig is the PTP section (source_ptp_linux.go): ptp4l's state through
// its management socket, and our own measurement-only probe of the master.
type PTPConfig struct {
	Enabled bool `yaml:"enabled"`
	// Ptp4l are the ptp4l monitored: one (a mapping), or a boundary
	// clock's or a dual-NIC board's several (a list of named instances).
	Ptp4l conf.Instances[Ptp4lConfig] `yaml:"ptp4l"`
	Probe PTPProbeConfig              `yaml:"probe"`
}

// Ptp4lConfig monitors a ptp4l.
type Ptp4lConfig struct {
	conf.Instance `yaml:",inline"` // its sources: ptp4l:<name>
	Socket        string           `yaml:"socket"` // ptp4l's uds_address
	Domain        int              `yaml:"domain"`
	Interval      time.Duration    `yaml:"interval"`
	Timeout       time.Duration    `yaml:"timeout"`
	// Judge judges the clock ptp4l disciplines against its grandmaster
	// (clock "ptp4l", source "ptp4l:<socket>").
	Judge JudgeConfig `yaml:"judge"`
	// Subscribe asks ptp4l to push every port state change (and, from
	// linuxptp 4.0, every Sync's TIME_STATUS_NP) through SUBSCRIBE_EVENTS_NP
	// for SubscribeDuration, renewed at half of it (source_ptp_push.go).
	// The datasets are polled at Interval all the same.
	Subscribe         bool          `yaml:"subscribe"`
	SubscribeDuration time.Duration `yaml:"subscribe_duration"`
	// EventMonitor is the Unix datagram socket monagent binds for ptp4l's
	// slave_event_monitor (the same path in ptp4l's configuration); empty:
	// off (source_ptp_events.go).
	EventMonitor string `yaml:"event_monitor"`
	// DelayFilterLength is ptp4l's delay_filter_length, with which the
	// event monitor's offsets are computed as ptp4l computes them.
	DelayFilterLength int `yaml:"delay_filter_length"`
	// Timestamping is ptp4l's time_stamping as far as the event monitor
	// needs it: software (t2 and t3 are CLOCK_REALTIME) or hardware (they
	// are the PHC of Interface, ptp4l's interface: the phc source's model
	// of that PHC moves them to REALTIME).
	Timestamping string `yaml:"timestamping"`
	Interface    string `yaml:"interface"`
}

func (c Ptp4lConfig) Place() (string, string) { return "socket", c.Socket }

// ptp4lJudge: the bound is |offset from master| + mean path delay (the
// delay covers any path asymmetry, which PTP cannot see), so the threshold,
// 100 µs, is above a software-timestamped LAN's path delay (10–50 µs) and
// far above a hardware one's (0.5–5 µs; the reference study's 99 % |offset|
// is 1.32 µs); set it to what your correlation needs once the path delay is
// known. Holdover 5 s and 2 samples are linuxptp-daemon's clock_state habit.
func ptp4lJudge() JudgeConfig {
	return JudgeConfig{Enabled: true, Threshold: 100 * time.Microsecond, Holdover: 5 * time.Second, MinSamples: 2}
}

// PTPProbeConfig is the delay-request probe.
type PTPProbeConfig struct {
	Enabled   bool          `yaml:"enabled"`
	Interface string        `yaml:"interface"`
	Transport string        `yaml:"transport"` // udp (UDPv4) or l2 (IEEE 802.3, needs CAP_NET_RAW)
	Master    string        `yaml:"master"`    // unicast Delay_Req to this address; "" multicast
	Domain    int           `yaml:"domain"`
	TxWait    time.Duration `yaml:"tx_wait"`
	// Timestamping is software (kernel) or hardware (the NIC's PHC; the phc
	// source must track that PHC, its model moves the timestamps to REALTIME).
	Timestamping string `yaml:"timestamping"`
	// Judge judges the system clock against the master the probe follows
	// (clock "system", source "ptp_probe:<interface>"), as ptp4l's.
	Judge JudgeConfig `yaml:"judge"`
}

func (p *PTPConfig) defaults() {
	*p = PTPConfig{
		Ptp4l: conf.NewInstances("ptp.ptp4l", Ptp4lConfig{Socket: "/var/run/ptp4l", Interval: time.Second, Timeout: time.Second, Judge: ptp4lJudge(),
			Subscribe: true, SubscribeDuration: 180 * time.Second, DelayFilterLength: ptp.DefaultDelayFilterLength, Timestamping: "software"}),
		Probe: PTPProbeConfig{Transport: "udp", TxWait: 10 * time.Millisecond, Timestamping: "software", Judge: ptp4lJudge()},
	}
}

func (p *PTPConfig) check(ps *problems) {
	if !p.Enabled {
		return
	}
	if !p.Ptp4l.On() && !p.Probe.Enabled {
		ps.Add("ptp", "enable ptp4l (the monitor) or probe")
	}
	keys, _ := p.Ptp4l.All()
	monitors := conf.Seen[string]{}
	p.Ptp4l.Check(ps, func(k string, l Ptp4lConfig) {
		if j, dup := monitors.Again(l.EventMonitor, slices.Index(keys, k)); dup && l.EventMonitor != "" {
			ps.Dup(k+".event_monitor", keys[j]+".event_monitor", "%s is another instance's event monitor", l.EventMonitor)
		}
		p.checkPtp4l(k, l, ps)
	})
	if pr := p.Probe; pr.Enabled {
		pr.Judge.Check("ptp.probe.judge", ps)
		ps.Set("ptp.probe.interface", pr.Interface, "")
		if pr.Transport != "udp" && pr.Transport != "l2" {
			ps.Add("ptp.probe.transport", "%q: must be udp or l2", pr.Transport)
		}
		conf.Within(ps, "ptp.probe.domain", pr.Domain, 0, 255, "")
		if pr.Master != "" {
			if pr.Transport == "l2" {
				ps.Add("ptp.probe.master", "unicast Delay_Req is for transport udp; l2 sends to 01:1b:19:00:00:00")
			} else if _, err := netip.ParseAddr(pr.Master); err != nil {
				ps.Add("ptp.probe.master", "%q is not an IP address", pr.Master)
			}
		}
		ps.Positive("ptp.probe.tx_wait", pr.TxWait)
		if pr.Timestamping != "software" && pr.Timestamping != "hardware" {
			ps.Add("ptp.probe.timestamping", "%q is not software or hardware", pr.Timestamping)
		}
	}
}

func (p *PTPConfig) checkPtp4l(key string, l Ptp4lConfig, ps *problems) {
	ps.Set(key+".socket", l.Socket, " (ptp4l's uds_address)")
	conf.Within(ps, key+".domain", l.Domain, 0, 255, "")
	ps.Interval(key+".interval", l.Interval)
	ps.Positive(key+".timeout", l.Timeout)
	l.Judge.Check(key+".judge", ps)
	if l.Subscribe && (l.SubscribeDuration < 2*time.Second || l.SubscribeDuration > 65535*time.Second) {
		ps.Add(key+".subscribe_duration", "%v: must be within 2s..65535s (ptp4l's duration is a 16-bit count of seconds)", l.SubscribeDuration)
	}
	conf.Within(ps, key+".delay_filter_length", l.DelayFilterLength, 1, ptp.MaxDelayFilterLength, " (ptp4l's delay_filter_length)")
	switch l.Timestamping {
	case "software":
	case "hardware":
		ps.Set(key+".interface", l.Interface, " (ptp4l's interface, whose PHC stamps t2 and t3 with hardware timestamping)")
	default:
		ps.Add(key+".timestamping", "%q is not software or hardware (ptp4l's time_stamping)", l.Timestamping)
	}
	if m := l.EventMonitor; m != "" {
		if !filepath.IsAbs(m) {
			ps.Add(key+".event_monitor", "%q: must be an absolute path (ptp4l's slave_event_monitor)", m)
		} else if len(m) > 107 {
			ps.Add(key+".event_monitor", "%q: longer than a Unix socket path can be (107 bytes)", m)
		} else if m == l.Socket {
			ps.Add(key+".event_monitor", "%q is ptp4l's own management socket", m)
		}
	}
}

// board checks that the probe's interface exists, and that a hardware
// timestamping ptp4l's has a PHC.
func (p *PTPConfig) board(paths PathsConfig, ps *problems) {
	keys, all := p.Ptp4l.All()
	for i, l := range all {
		if p.Enabled && l.Enabled && l.EventMonitor != "" && l.Timestamping == "hardware" && l.Interface != "" {
			ifaceHasPHC(paths, keys[i]+".interface", l.Interface, ps)
		}
	}
	if p.Enabled && p.Probe.Enabled && p.Probe.Interface != "" {
		if p.Probe.Timestamping == "hardware" {
			ifaceHasPHC(paths, "ptp.probe.interface", p.Probe.Interface, ps)
		} else {
			ifaceExists(paths, "ptp.probe.interface", p.Probe.Interface, ps)
		}
	}
}
