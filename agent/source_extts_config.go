package agent

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/phc"
)

// ExttsConfig is the PHC external-timestamp source (source_extts_linux.go):
// channels of one PHC stamping edges on input pins in the PHC's time, each
// shipped as an extts_event record at its stamp moved to REALTIME through
// the phc source's model of that PHC.
type ExttsConfig struct {
	Enabled  bool                 `yaml:"enabled"`
	Interval time.Duration        `yaml:"interval"` // how often the edges are shipped
	PHC      string               `yaml:"phc"`      // /dev/ptpN
	Channels []ExttsChannelConfig `yaml:"channels"`
	// Ring is the events between the reader and the shipper, a power of two.
	Ring int `yaml:"ring"`
}

// ExttsChannelConfig is one extts channel.
type ExttsChannelConfig struct {
	Channel int    `yaml:"channel"` // extts channel index
	Pin     int    `yaml:"pin"`     // programmable pin to assign, or -1 to leave the pins alone
	Edges   string `yaml:"edges"`   // rising, falling or both (default rising)
	Name    string `yaml:"name"`    // the name tag (default: channel<N>)
	// Period is the expected time between two stamps (1s for a PPS on one
	// edge), or 0: when set, the edges missing between two stamps are counted
	// as lost.
	Period time.Duration `yaml:"period"`
}

func (x *ExttsConfig) defaults() {
	*x = ExttsConfig{Interval: time.Second, PHC: "/dev/ptp0", Ring: 1024}
}

func (c *ExttsChannelConfig) defaults() {
	*c = ExttsChannelConfig{Pin: phc.NoPin, Edges: "rising"}
}

// UnmarshalYAML decodes a channels entry over its defaults.
func (c *ExttsChannelConfig) UnmarshalYAML(n *yaml.Node) error {
	var def ExttsChannelConfig
	def.defaults()
	return conf.DecodeOver(n, c, def)
}

// tagName is the channel's name tag.
func (c *ExttsChannelConfig) tagName() string {
	if c.Name != "" {
		return c.Name
	}
	return "channel" + strconv.Itoa(c.Channel)
}

// request is the phc request of a checked channel.
func (c *ExttsChannelConfig) request() phc.ExttsChannel {
	edges, _ := phc.ParseEdges(c.Edges)
	return phc.ExttsChannel{Channel: c.Channel, Pin: c.Pin, Edges: edges, PeriodNS: c.Period.Nanoseconds()}
}

func (x *ExttsConfig) check(p *problems) {
	if !x.Enabled {
		return
	}
	p.Interval("extts.interval", x.Interval)
	if _, err := phc.DeviceDomain(x.PHC); err != nil {
		p.Add("extts.phc", "%q is not a PHC device (/dev/ptpN)", x.PHC)
	}
	if len(x.Channels) == 0 {
		p.Add("extts.channels", "list at least one channel")
	}
	checkRing(p, "extts.ring", x.Ring)
	chans, pins := conf.Seen[int]{}, conf.Seen[int]{}
	for i, c := range x.Channels {
		key := fmt.Sprintf("extts.channels[%d]", i)
		if c.Channel < 0 {
			p.Add(key+".channel", "must not be negative, got %d", c.Channel)
		} else if j, dup := chans.Again(c.Channel, i); dup {
			p.Add(key+".channel", "channel %d is also extts.channels[%d]", c.Channel, j)
		}
		if c.Pin < phc.NoPin {
			p.Add(key+".pin", "%d: a pin index, or -1 to leave the pins alone", c.Pin)
		} else if c.Pin != phc.NoPin {
			if j, dup := pins.Again(c.Pin, i); dup {
				p.Add(key+".pin", "pin %d is also extts.channels[%d]'s: a pin feeds one channel", c.Pin, j)
			}
		}
		if _, err := phc.ParseEdges(c.Edges); err != nil {
			p.Add(key+".edges", "%q: want both, falling, rising", c.Edges)
		}
		conf.NotNegative(p, key+".period", c.Period)
	}
}

// board checks that the PHC exists.
func (x *ExttsConfig) board(paths PathsConfig, p *problems) {
	if !x.Enabled || x.PHC == "" {
		return
	}
	p.Exists("extts.phc", "no PHC", x.PHC)
}
