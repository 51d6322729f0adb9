package agent

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/gpio"
)

// PPSConfig is the PPS source (source_pps.go): /dev/ppsN devices, each
// new assert (or clear) edge shipped as a pps_event record at the kernel's
// stamp, which PPS drivers take in REALTIME.
type PPSConfig struct {
	Enabled  bool              `yaml:"enabled"`
	Devices  []PPSDeviceConfig `yaml:"devices"`
	Interval time.Duration     `yaml:"interval"` // how often the edges are shipped
	// Judge judges the system clock against each device's assert edges,
	// taken as the start of a UTC second (a GNSS receiver's PPS): off by
	// default, as not every PPS marks UTC seconds. Latency is the most an
	// edge's stamp may lag the pulse (interrupt latency, cable), which the
	// bound adds.
	Judge   JudgeConfig   `yaml:"judge"`
	Latency time.Duration `yaml:"latency"`
}

// PPSDeviceConfig is one PPS device; each is one event source.
type PPSDeviceConfig struct {
	Device string `yaml:"device"` // /dev/ppsN, or ppsN under paths.dev
	Name   string `yaml:"name"`   // the name tag (default: the device's base name)
	Assert bool   `yaml:"assert"` // ship assert edges (default true)
	Clear  bool   `yaml:"clear"`  // ship clear edges (default false); the device must capture them
	// Ring is the edges between the reader and the shipper, a power of two.
	Ring int `yaml:"ring"`
}

func (p *PPSConfig) defaults() {
	*p = PPSConfig{Interval: time.Second, Latency: 20 * time.Microsecond,
		Judge: JudgeConfig{Threshold: 100 * time.Microsecond, Holdover: time.Minute, MinSamples: 4}}
}

// UnmarshalYAML decodes a devices entry over its defaults.
func (d *PPSDeviceConfig) UnmarshalYAML(n *yaml.Node) error {
	return conf.DecodeOver(n, d, PPSDeviceConfig{Assert: true, Ring: 64})
}

// tagName is the device's name tag.
func (d *PPSDeviceConfig) tagName() string { return cmp.Or(d.Name, filepath.Base(d.Device)) }

func (p *PPSConfig) check(ps *problems) {
	if !p.Enabled {
		return
	}
	ps.Interval("pps.interval", p.Interval)
	p.Judge.Check("pps.judge", ps)
	conf.NotNegative(ps, "pps.latency", p.Latency)
	if len(p.Devices) == 0 {
		ps.Add("pps.devices", "list at least one PPS device")
	}
	seen, names := conf.Seen[string]{}, conf.Seen[string]{}
	for i, d := range p.Devices {
		key := fmt.Sprintf("pps.devices[%d]", i)
		twice := false
		switch {
		case d.Device == "":
			ps.Add(key+".device", "must be set (/dev/ppsN or ppsN)")
		case !strings.HasPrefix(filepath.Base(d.Device), "pps"):
			ps.Add(key+".device", "%q is not a PPS device (/dev/ppsN)", d.Device)
		default:
			if j, dup := seen.Again(filepath.Base(d.Device), i); dup {
				ps.Dup(key+".device", fmt.Sprintf("pps.devices[%d].device", j), "%s is also pps.devices[%d]: one reader per device", d.Device, j)
				twice = true
			}
		}
		if j, dup := names.Again(d.tagName(), i); dup && d.Device != "" && !twice {
			// One name tag: both devices' pps_event series would be one.
			ps.Dup(key+".name", fmt.Sprintf("pps.devices[%d]", j), "name %q is another device's too: their pps_event records would share one series", d.tagName())
		}
		if !d.Assert && !d.Clear {
			ps.Add(key, "neither assert nor clear: ship at least one edge")
		}
		checkRing(ps, key+".ring", d.Ring)
	}
}

// board checks that every device exists.
func (p *PPSConfig) board(paths PathsConfig, ps *problems) {
	if !p.Enabled {
		return
	}
	for i, d := range p.Devices {
		if d.Device == "" {
			continue
		}
		ps.Exists(fmt.Sprintf("pps.devices[%d].device", i), "no PPS device", gpio.DevicePath(paths.Dev, d.Device))
	}
}
