package agent

import (
	"fmt"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/timebase"
)

// ClockConfig is the system clock source (source_clock.go): offsets between
// the system clocks, the kernel's adjtimex state and clock step detection.
type ClockConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
	// Clocks are measured against the reference clock (monotonic_raw).
	Clocks    []string `yaml:"clocks"`
	Reference string   `yaml:"reference"`
	Timex     bool     `yaml:"timex"`
	// A step is reported when a clock's offset from the reference moves by more
	// than StepThreshold beyond what MaxSlewPPM allows between two samples.
	StepThreshold time.Duration `yaml:"step_threshold"`
	MaxSlewPPM    float64       `yaml:"max_slew_ppm"`
}

func (c *ClockConfig) defaults() {
	*c = ClockConfig{
		Enabled: true, Interval: time.Second,
		Clocks:    []string{"realtime", "tai", "monotonic", "boottime"},
		Reference: "monotonic_raw", Timex: true,
		StepThreshold: time.Millisecond, MaxSlewPPM: 500,
	}
}

func (c *ClockConfig) check(p *problems) {
	p.Interval("clock.interval", c.Interval)
	ref, err := timebase.ParseDomain(c.Reference)
	if _, sys := timebase.SystemClockFor(ref); err != nil || !sys {
		p.Add("clock.reference", "%q is not a system clock (realtime, tai, monotonic, monotonic_raw, boottime)", c.Reference)
	}
	seen := conf.Seen[timebase.Domain]{}
	for i, name := range c.Clocks {
		key := fmt.Sprintf("clock.clocks[%d]", i)
		d, err := timebase.ParseDomain(name)
		if _, sys := timebase.SystemClockFor(d); err != nil || !sys {
			p.Add(key, "%q is not a system clock (realtime, tai, monotonic, monotonic_raw, boottime)", name)
		} else if d == ref {
			p.Add(key, "%q is the reference clock itself", name)
		} else if j, dup := seen.Again(d, i); dup {
			p.Dup(key, fmt.Sprintf("clock.clocks[%d]", j), "%q is listed twice: two identical clock_offset points each collection", name)
		}
	}
	p.Positive("clock.step_threshold", c.StepThreshold)
	conf.Within(p, "clock.max_slew_ppm", c.MaxSlewPPM, 0, 1e6, "")
}
