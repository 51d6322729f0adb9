package agent

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/sensors"
)

// GPIOConfig is the GPIO edge source (source_gpio.go): lines of GPIO
// character devices requested with edge detection, each edge shipped as a
// gpio_event record at the kernel's stamp moved to REALTIME.
type GPIOConfig struct {
	Enabled  bool             `yaml:"enabled"`
	Interval time.Duration    `yaml:"interval"` // how often the edges are shipped
	Chips    []GPIOChipConfig `yaml:"chips"`
	// PHC, when set (/dev/ptpN), adds each edge's time in that PHC as the
	// phc_ns field, through the phc source's model of it.
	PHC string `yaml:"phc"`
	// Triggers tie a configured line's edges to sensor readings
	// (source_gpio_trigger.go): a gpio_trigger record per edge.
	Triggers []GPIOTriggerConfig `yaml:"triggers"`
}

// GPIOTriggerConfig is one trigger rule: on each edge of Line of Chip (a line
// listed in gpio.chips) that matches Edge, the sensors whose
// "source/device/name" matches one of the Sensors patterns (path.Match) are
// read one-shot and shipped in one gpio_trigger record at the edge's time.
// An edge within MinInterval (by kernel stamp) of the last edge that
// triggered a reading is skipped and counted.
type GPIOTriggerConfig struct {
	Name        string        `yaml:"name"`         // the trigger tag and the self-metrics' trigger_<name>_ prefix
	Chip        string        `yaml:"chip"`         // as in gpio.chips
	Line        int           `yaml:"line"`         // the line's offset
	Edge        string        `yaml:"edge"`         // rising, falling or both (default both)
	Sensors     []string      `yaml:"sensors"`      // "hwmon/ina226/*", "iio/*/voltage0"
	MinInterval time.Duration `yaml:"min_interval"` // default 100ms; 0: every edge
}

// GPIOChipConfig is one chip's lines. Lines with the same settings (edge,
// bias, active_low, debounce, clock) share one line request; each request is
// one event source.
type GPIOChipConfig struct {
	Chip  string           `yaml:"chip"` // gpiochipN, or a path under paths.dev
	Lines []GPIOLineConfig `yaml:"lines"`
	// Buffer is the kernel's event queue of a request, in events (at most
	// 1024); it is also the largest batch one read takes.
	Buffer int `yaml:"buffer"`
	// Ring is the events between the reader and the shipper, a power of two.
	Ring int `yaml:"ring"`
	// Replay reads raw 48-byte gpio_v2_line_event records from this file or
	// FIFO instead of requesting the lines: a capture replayed, or a test's
	// fixture. It is read once, to its end (a FIFO: until its writer closes);
	// events of offsets not listed in lines are shipped with an empty name.
	// The lines' clock says what the stamps count in.
	Replay string `yaml:"replay"`
}

// GPIOLineConfig is one line.
type GPIOLineConfig struct {
	Offset    int           `yaml:"offset"`
	Name      string        `yaml:"name"`       // the name tag (default: line<offset>)
	Edge      string        `yaml:"edge"`       // rising, falling or both (default both)
	Bias      string        `yaml:"bias"`       // as_is, pull_up, pull_down or disabled (default as_is)
	ActiveLow bool          `yaml:"active_low"` // swaps rising and falling
	Debounce  time.Duration `yaml:"debounce"`   // whole microseconds; 0: none
	Clock     string        `yaml:"clock"`      // monotonic, realtime or hte (default monotonic)
}

func (g *GPIOConfig) defaults() {
	*g = GPIOConfig{Interval: time.Second}
}

// UnmarshalYAML decodes a triggers entry over its defaults.
func (tr *GPIOTriggerConfig) UnmarshalYAML(n *yaml.Node) error {
	return conf.DecodeOver(n, tr, GPIOTriggerConfig{Edge: "both", MinInterval: 100 * time.Millisecond})
}

// UnmarshalYAML decodes a chips entry over its defaults.
func (c *GPIOChipConfig) UnmarshalYAML(n *yaml.Node) error {
	return conf.DecodeOver(n, c, GPIOChipConfig{Buffer: gpio.MaxEventBufferSize, Ring: 4096})
}

// UnmarshalYAML decodes a lines entry over its defaults.
func (l *GPIOLineConfig) UnmarshalYAML(n *yaml.Node) error {
	return conf.DecodeOver(n, l, GPIOLineConfig{Edge: "both", Bias: "as_is", Clock: "monotonic"})
}

// lineConfig is the request settings of a checked line.
func (l *GPIOLineConfig) lineConfig() gpio.LineConfig {
	edge, _ := gpio.ParseEdgeDetect(l.Edge)
	bias, _ := gpio.ParseBias(l.Bias)
	clock, _ := gpio.ParseEventClock(l.Clock)
	return gpio.LineConfig{Consumer: "monagent", Edge: edge, Bias: bias, ActiveLow: l.ActiveLow, Debounce: l.Debounce, Clock: clock}
}

// tagName is the line's name tag.
func (l *GPIOLineConfig) tagName() string { return cmp.Or(l.Name, "line"+strconv.Itoa(l.Offset)) }

// groupGPIOLines splits a chip's lines into requests: lines with the same
// settings share one (a replay is one group).
func groupGPIOLines(cc GPIOChipConfig) [][]GPIOLineConfig {
	if cc.Replay != "" {
		return [][]GPIOLineConfig{cc.Lines}
	}
	var groups [][]GPIOLineConfig
	for _, l := range cc.Lines {
		placed := false
		for g := range groups {
			if groups[g][0].lineConfig() == l.lineConfig() {
				groups[g] = append(groups[g], l)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []GPIOLineConfig{l})
		}
	}
	return groups
}

func offsetsString(lines []GPIOLineConfig) string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = strconv.Itoa(l.Offset)
	}
	return strings.Join(s, ",")
}

func (g *GPIOConfig) check(p *problems) {
	if !g.Enabled {
		return
	}
	p.Interval("gpio.interval", g.Interval)
	if len(g.Chips) == 0 {
		p.Add("gpio.chips", "list at least one chip with its lines")
	}
	if g.PHC != "" && !strings.HasPrefix(filepath.Base(g.PHC), "ptp") {
		p.Add("gpio.phc", "%q is not a PHC device (/dev/ptpN)", g.PHC)
	}
	chips := conf.Seen[string]{}
	for i, c := range g.Chips {
		key := fmt.Sprintf("gpio.chips[%d]", i)
		p.Set(key+".chip", c.Chip, " (gpiochipN or a device path)")
		if j, dup := chips.Again(c.Chip, i); dup && c.Chip != "" {
			p.Add(key+".chip", "%s is also gpio.chips[%d]: list its lines in one entry", c.Chip, j)
		}
		if len(c.Lines) == 0 {
			p.Add(key+".lines", "list at least one line")
		}
		if c.Buffer < 1 || c.Buffer > gpio.MaxEventBufferSize {
			p.Add(key+".buffer", "%d events: 1 to %d (the kernel's limit)", c.Buffer, gpio.MaxEventBufferSize)
		}
		checkRing(p, key+".ring", c.Ring)
		offsets := conf.Seen[int]{}
		for j, l := range c.Lines {
			lk := fmt.Sprintf("%s.lines[%d]", key, j)
			if l.Offset < 0 {
				p.Add(lk+".offset", "must not be negative, got %d", l.Offset)
			} else if k, dup := offsets.Again(l.Offset, j); dup {
				p.Add(lk+".offset", "offset %d is also %s.lines[%d]", l.Offset, key, k)
			}
			if _, err := gpio.ParseEdgeDetect(l.Edge); err != nil {
				p.Add(lk+".edge", "%v", err)
			}
			if _, err := gpio.ParseBias(l.Bias); err != nil {
				p.Add(lk+".bias", "%v", err)
			}
			if _, err := gpio.ParseEventClock(l.Clock); err != nil {
				p.Add(lk+".clock", "%v", err)
			} else if l.Clock == "hte" {
				p.Add(lk+".clock", "hte stamps count in the engine's own timebase, which monagent cannot move to REALTIME yet")
			}
			if l.Debounce < 0 || l.Debounce%time.Microsecond != 0 {
				p.Add(lk+".debounce", "%v: whole microseconds, not negative", l.Debounce)
			}
			if c.Replay != "" && l.Clock != c.Lines[0].Clock {
				p.Add(lk+".clock", "%q differs from lines[0]'s %q: a replay has one clock", l.Clock, c.Lines[0].Clock)
			}
		}
		if len(c.Lines) > gpio.MaxLines {
			p.Add(key+".lines", "%d lines: at most %d per chip", len(c.Lines), gpio.MaxLines)
		}
	}
	g.checkTriggers(p)
}

func (g *GPIOConfig) checkTriggers(p *problems) {
	names := conf.Seen[string]{}
	for i, tr := range g.Triggers {
		key := fmt.Sprintf("gpio.triggers[%d]", i)
		if !conf.IsName(tr.Name) {
			p.Add(key+".name", "%q: want letters, digits and _ (it names the self-metrics trigger_<name>_*)", tr.Name)
		} else if j, dup := names.Again(tr.Name, i); dup {
			p.Add(key+".name", "%q is also gpio.triggers[%d]", tr.Name, j)
		}
		edge, errEdge := gpio.ParseEdgeDetect(tr.Edge)
		if errEdge != nil {
			p.Add(key+".edge", "%v", errEdge)
		}
		if tr.MinInterval < 0 {
			p.Add(key+".min_interval", "%v is negative", tr.MinInterval)
		}
		if len(tr.Sensors) == 0 {
			p.Add(key+".sensors", "list at least one sensor pattern (source/device/name)")
		}
		for j, pat := range tr.Sensors {
			if err := sensors.CheckPattern(pat); err != nil {
				p.Add(fmt.Sprintf("%s.sensors[%d]", key, j), "%q: %v", pat, err)
			}
		}
		line, chip := g.triggerLine(tr)
		switch {
		case tr.Chip == "":
			p.Add(key+".chip", "must be set: a chip of gpio.chips")
		case !chip:
			p.Add(key+".chip", "%s is not in gpio.chips", tr.Chip)
		case line == nil:
			p.Add(key+".line", "%d is not a line of %s in gpio.chips", tr.Line, tr.Chip)
		case errEdge == nil && line.lineConfig().Edge&edge == 0:
			p.Add(key+".edge", "%s: line %d of %s detects %s edges only: the trigger would never fire", tr.Edge, tr.Line, tr.Chip, line.Edge)
		}
	}
}

// triggerLine is the configured line a trigger names (nil: none), and
// whether its chip is configured.
func (g *GPIOConfig) triggerLine(tr GPIOTriggerConfig) (line *GPIOLineConfig, chip bool) {
	for i := range g.Chips {
		if c := &g.Chips[i]; c.Chip == tr.Chip {
			chip = true
			if j := slices.IndexFunc(c.Lines, func(l GPIOLineConfig) bool { return l.Offset == tr.Line }); j >= 0 {
				return &c.Lines[j], true
			}
		}
	}
	return nil, chip
}

// board checks that every chip (or replay file) and the PHC exist.
func (g *GPIOConfig) board(paths PathsConfig, p *problems) {
	if !g.Enabled {
		return
	}
	for i, c := range g.Chips {
		key := fmt.Sprintf("gpio.chips[%d]", i)
		if c.Replay != "" {
			p.Exists(key+".replay", "replay file", c.Replay)
			continue
		}
		if c.Chip == "" {
			continue
		}
		p.Exists(key+".chip", "no GPIO chip", gpio.DevicePath(paths.Dev, c.Chip))
	}
	if g.PHC != "" {
		p.Exists("gpio.phc", "no PHC", g.PHC)
	}
}
