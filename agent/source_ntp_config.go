package agent

import (
	"fmt"
	"net/netip"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/ntp"
)

// NTPConfig is the NTP section (source_ntp_linux.go): our own SNTP probe of
// each server, and chronyd's view of its sources.
type NTPConfig struct {
	Enabled bool              `yaml:"enabled"`
	Servers []NTPServerConfig `yaml:"servers"`
	Timeout time.Duration     `yaml:"timeout"` // wait for each reply
	TxWait  time.Duration     `yaml:"tx_wait"` // wait for a kernel transmit timestamp
	// Timestamping is software (kernel) or hardware (the NIC of Interface; its
	// PHC must be measured by the phc source so timestamps can be translated).
	Timestamping string                       `yaml:"timestamping"`
	Interface    string                       `yaml:"interface"`
	Chrony       conf.Instances[ChronyConfig] `yaml:"chrony"`
	Ntpd         conf.Instances[NtpdConfig]   `yaml:"ntpd"`
	// Judge judges the system clock against each server the probe polls
	// (clock "system", source "ntp:<server>").
	Judge JudgeConfig `yaml:"judge"`
}

// NTPServerConfig is one server the probe measures.
type NTPServerConfig struct {
	Address      string        `yaml:"address"`  // host or host:port (port 123)
	Interval     time.Duration `yaml:"interval"` // between polls, at least 1 s
	Burst        int           `yaml:"burst"`    // requests per poll; the minimum-delay one is kept
	BurstSpacing time.Duration `yaml:"burst_spacing"`
	Basic        bool          `yaml:"basic"` // no interleaved mode
	// MaxDelayDevRatio flags samples whose delay rose more than this many
	// spreads above the recent minimum (chronyd's maxdelaydevratio; default 10,
	// negative: off). Flagged samples are shipped with delay_outlier=true.
	MaxDelayDevRatio float64 `yaml:"max_delay_dev_ratio"`
}

// ChronyConfig monitors a local chronyd, over its command socket or, when
// Address is set instead, its UDP command port.
type ChronyConfig struct {
	conf.Instance `yaml:",inline"` // its source and judged clock: chrony:<name>
	Socket        string           `yaml:"socket"`  // command socket (tracking, sources, ntpdata, serverstats); "" and no address: DefaultChronySocket
	Address       string           `yaml:"address"` // or UDP host:port (tracking, sources only)
	Interval      time.Duration    `yaml:"interval"`
	// Judge judges the system clock as chronyd disciplines it (clock
	// "system", source "chrony").
	Judge JudgeConfig `yaml:"judge"`
}

// NtpdConfig monitors an ntpd (NTPsec, or NTP classic) over NTP mode 6
// control messages, as ntpq does: ntpd must answer queries from the agent's
// address (`restrict 127.0.0.1` without noquery; docs/deployment.md).
type NtpdConfig struct {
	conf.Instance `yaml:",inline"` // its source and judged clock: ntpd:<name>
	Address       string           `yaml:"address"` // ntpd's UDP address, IP:port
	Interval      time.Duration    `yaml:"interval"`
	// Judge judges the system clock as ntpd disciplines it (clock "system",
	// source "ntpd").
	Judge JudgeConfig `yaml:"judge"`
}

func (c ChronyConfig) Place() (string, string) {
	if c.Address != "" && c.Socket == "" {
		return "address", c.Address
	}
	return "socket", c.target()
}

func (c NtpdConfig) Place() (string, string) { return "address", c.Address }

// DefaultChronySocket is chronyd's command socket where Debian puts it.
const DefaultChronySocket = "/run/chrony/chronyd.sock"

// target is where the monitor asks: the socket, the UDP address, or the
// default socket when neither is set.
func (c ChronyConfig) target() string {
	switch {
	case c.Socket != "":
		return c.Socket
	case c.Address != "":
		return c.Address
	}
	return DefaultChronySocket
}

func (n *NTPConfig) defaults() {
	*n = NTPConfig{
		Timeout: time.Second, TxWait: 10 * time.Millisecond, Timestamping: "software",
		Chrony: conf.NewInstances("ntp.chrony", ChronyConfig{Interval: 8 * time.Second, Judge: ntpJudge(1)}),
		Ntpd:   conf.NewInstances("ntp.ntpd", NtpdConfig{Address: "127.0.0.1:123", Interval: 8 * time.Second, Judge: ntpJudge(1)}),
		Judge:  ntpJudge(4),
	}
}

// ntpJudge is the judge of an NTP-synchronised system clock. The threshold,
// 1 ms, is on the error bound, not the offset: the reference study's 99 %
// |offset| for NTP on a LAN is 35 µs, but the bound adds half the round
// trip (50–250 µs with kernel stamps) and the server's root distance,
// commonly a few hundred µs. Holdover 5 minutes: an NTP-disciplined clock
// drifts by its frequency error, tens of ppb after chronyd has trained it,
// and the predicted bound ends the holdover sooner when it grows faster.
// The probe waits for 4 samples (a burst's worth, as chronyd before it
// selects a source); chronyd's and ntpd's own state need 1.
func ntpJudge(minSamples int) JudgeConfig {
	return JudgeConfig{Enabled: true, Threshold: time.Millisecond, Holdover: 5 * time.Minute, MinSamples: minSamples}
}

// DefaultNTPServer is a server entry with every default; address is set.
func DefaultNTPServer(address string) NTPServerConfig {
	var s NTPServerConfig
	s.defaults()
	s.Address = address
	return s
}

// defaults sets the keys of one ntp.servers entry.
func (s *NTPServerConfig) defaults() {
	*s = NTPServerConfig{
		Interval:         8 * time.Second, // the reference study's best NTP setting
		Burst:            1,
		BurstSpacing:     2 * time.Second,
		MaxDelayDevRatio: 10,
	}
}

// UnmarshalYAML decodes a servers entry over its defaults, so that a key the
// entry leaves out keeps its default and a key it sets is checked.
func (s *NTPServerConfig) UnmarshalYAML(n *yaml.Node) error {
	return conf.DecodeOver(n, s, DefaultNTPServer(""))
}

func (n *NTPConfig) check(p *problems) {
	if !n.Enabled {
		return
	}
	n.Judge.Check("ntp.judge", p)
	n.Chrony.Check(p, func(k string, c ChronyConfig) {
		c.Judge.Check(k+".judge", p)
		if c.Socket != "" && c.Address != "" {
			p.Dup(k+".address", k+".socket", "set one of the command socket and the UDP address, not both (the socket gives ntpdata and serverstats too)")
		}
		p.Interval(k+".interval", c.Interval)
	})
	n.Ntpd.Check(p, func(k string, c NtpdConfig) {
		c.Judge.Check(k+".judge", p)
		if _, err := netip.ParseAddrPort(c.Address); err != nil {
			p.Add(k+".address", "want ntpd's IP:port (mode 6 over UDP, e.g. 127.0.0.1:123), got %q", c.Address)
		}
		p.Interval(k+".interval", c.Interval)
	})
	if len(n.Servers) == 0 && !n.Chrony.On() && !n.Ntpd.On() {
		p.Add("ntp.servers", "no server to probe and the chrony and ntpd monitors are off")
	}
	seen := conf.Seen[string]{}
	for i, s := range n.Servers {
		key := fmt.Sprintf("ntp.servers[%d]", i)
		if s.Address == "" {
			p.Add(key+".address", "must be set")
		} else if srv, err := ntp.ParseServer(s.Address); err != nil {
			p.Add(key+".address", "%v", err)
		} else if j, dup := seen.Again(srv.String(), i); dup {
			p.Dup(key+".address", fmt.Sprintf("ntp.servers[%d].address", j), "%q is %s again: two probes of one server would mix their series", s.Address, srv)
		}
		conf.AtLeast(p, key+".interval", s.Interval, time.Second, " (servers rate-limit faster clients)")
		if s.Burst < 1 || s.Burst > 16 {
			p.Add(key+".burst", "must be within 1..16, got %d", s.Burst)
		} else if s.Burst > 1 && (s.BurstSpacing <= 0 || time.Duration(s.Burst-1)*s.BurstSpacing >= s.Interval) {
			p.Add(key+".burst_spacing", "a burst of %d spaced %s does not fit the %s interval", s.Burst, s.BurstSpacing, s.Interval)
		}
	}
	p.Positive("ntp.timeout", n.Timeout)
	p.Positive("ntp.tx_wait", n.TxWait)
	switch n.Timestamping {
	case "software":
	case "hardware":
		if n.Interface == "" {
			p.Add("ntp.interface", "hardware timestamping needs the interface")
		}
	default:
		p.Add("ntp.timestamping", "%q is not software or hardware", n.Timestamping)
	}
}

// board checks that the interface whose hardware timestamps are used exists
// and has a PTP hardware clock to translate them with.
func (n *NTPConfig) board(paths PathsConfig, p *problems) {
	if n.Enabled && n.Timestamping == "hardware" && n.Interface != "" {
		ifaceHasPHC(paths, "ntp.interface", n.Interface, p)
	}
}
