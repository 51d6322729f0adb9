package agent

import (
	"net"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/gnss"
)

// GNSSConfig is the gpsd source (source_gnss.go): one connection to gpsd's
// JSON socket, every TPV, SKY, TOFF and PPS message shipped as a gnss
// record, and the system clock judged against the receiver.
type GNSSConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Address  string        `yaml:"address"`  // gpsd's TCP address, host:port
	Interval time.Duration `yaml:"interval"` // how often the messages are shipped
	// Ring is the messages between the reader and the shipper, a power of
	// two (gpsd sends a handful per second).
	Ring int `yaml:"ring"`
	// Judge judges the system clock against the receiver: LOCKED with a 3D
	// fix and Reference's messages arriving, each within the threshold.
	Judge JudgeConfig `yaml:"judge"`
	// Reference is the message the judge takes the offset from: pps (the
	// pulse's edge, to the µs) or toff (the arrival of the cycle's first
	// sentence: only for a receiver without PPS, to tens of ms at best).
	Reference string `yaml:"reference"`
	// Latency is the most a PPS edge's stamp lags the pulse (interrupt
	// latency, cable), TOFFLatency the most a TOFF's stamp lags the second
	// it reports (the receiver's output delay and the serial line); the
	// bound adds the one of the reference.
	Latency     time.Duration `yaml:"latency"`
	TOFFLatency time.Duration `yaml:"toff_latency"`
	// MaxDevices is the most receivers followed: messages of any device
	// beyond the first this many are counted (over_device_cap) and dropped,
	// so a gpsd naming ever new devices cannot grow the agent.
	MaxDevices int `yaml:"max_devices"`
	// ReadTimeout is how long the connection may bring nothing before it
	// counts as hung and is dialled again (read_timeouts): gpsd sends each
	// receiver's TPV once a cycle (1 s for nearly all), so ten cycles.
	ReadTimeout time.Duration `yaml:"read_timeout"`
}

// gnssMaxDevices is the most gnss.max_devices may be: each receiver is a
// judged clock and four series.
const gnssMaxDevices = 64

func (g *GNSSConfig) defaults() {
	*g = GNSSConfig{Address: gnss.DefaultAddress, Interval: time.Second, Ring: 256, Reference: "pps",
		Latency: 20 * time.Microsecond, TOFFLatency: 500 * time.Millisecond,
		MaxDevices: gnss.DefaultMaxDevices, ReadTimeout: 10 * time.Second,
		Judge: JudgeConfig{Enabled: true, Threshold: 100 * time.Microsecond, Holdover: time.Minute, MinSamples: 4}}
}

func (g *GNSSConfig) check(ps *problems) {
	if !g.Enabled {
		return
	}
	if _, port, err := net.SplitHostPort(g.Address); err != nil || port == "" {
		ps.Add("gnss.address", "want host:port (gpsd's default %s), got %q", gnss.DefaultAddress, g.Address)
	}
	ps.Interval("gnss.interval", g.Interval)
	checkRing(ps, "gnss.ring", g.Ring)
	g.Judge.Check("gnss.judge", ps)
	if g.Reference != "pps" && g.Reference != "toff" {
		ps.Add("gnss.reference", "want pps or toff, got %q", g.Reference)
	}
	conf.NotNegative(ps, "gnss.latency", g.Latency)
	conf.NotNegative(ps, "gnss.toff_latency", g.TOFFLatency)
	conf.Within(ps, "gnss.max_devices", g.MaxDevices, 1, gnssMaxDevices, " receivers")
	conf.AtLeast(ps, "gnss.read_timeout", g.ReadTimeout, 2*time.Second, " (gpsd reports once a cycle, 1 s)")
}
