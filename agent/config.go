package agent

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// Config is monagent's configuration file. Every section has defaults
// (Default) and checks (Validate) that name the offending key. Later sources
// (ntp, ptp, gpio, sensors, hca) and outputs (spool, influx) add sections here.
type Config struct {
	Host        string            `yaml:"host"` // the host tag; default: the hostname
	Paths       PathsConfig       `yaml:"paths"`
	Log         LogConfig         `yaml:"log"`
	Clock       ClockConfig       `yaml:"clock"`
	PHC         PHCConfig         `yaml:"phc"`
	Output      OutputConfig      `yaml:"output"`
	SelfMetrics SelfMetricsConfig `yaml:"self_metrics"`
}

// PathsConfig moves the kernel's file systems, for tests and containers.
type PathsConfig struct {
	Sys string `yaml:"sys"`
	Dev string `yaml:"dev"`
	Run string `yaml:"run"`
}

// LogConfig sets the agent's log.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// ClockConfig is the system clock source: offsets between the system clocks,
// the kernel's adjtimex state and clock step detection.
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

// PHCConfig is the PTP hardware clock source.
type PHCConfig struct {
	Enabled bool `yaml:"enabled"`
	// Devices (/dev/ptpN) and Interfaces (whose PHC is used) to measure; both
	// empty means every PHC found.
	Devices    []string      `yaml:"devices"`
	Interfaces []string      `yaml:"interfaces"`
	Interval   time.Duration `yaml:"interval"`
	Samples    int           `yaml:"samples"` // best of N reads per sample
	Method     string        `yaml:"method"`  // auto, precise, extended, basic
	Against    []string      `yaml:"against"` // system clocks: realtime, monotonic_raw, monotonic
	Window     int           `yaml:"window"`  // samples in the translation model
}

// OutputConfig is where records go until the spool and InfluxDB sinks exist.
type OutputConfig struct {
	Stdout bool   `yaml:"stdout"`
	File   string `yaml:"file"` // line protocol appended here; "" for none
}

// SelfMetricsConfig is the agent's own metrics.
type SelfMetricsConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
}

// Default returns the configuration used for every key a file leaves out.
func Default() Config {
	return Config{
		Paths: PathsConfig{Sys: "/sys", Dev: "/dev", Run: "/run"},
		Log:   LogConfig{Level: "info", Format: "text"},
		Clock: ClockConfig{
			Enabled: true, Interval: time.Second,
			Clocks:    []string{"realtime", "tai", "monotonic", "boottime"},
			Reference: "monotonic_raw", Timex: true,
			StepThreshold: time.Millisecond, MaxSlewPPM: 500,
		},
		PHC: PHCConfig{
			Enabled: true, Interval: time.Second, Samples: 9, Method: "auto",
			Against: []string{"realtime", "monotonic_raw"}, Window: 32,
		},
		Output:      OutputConfig{Stdout: false, File: "./data/monagent.lp"},
		SelfMetrics: SelfMetricsConfig{Enabled: true, Interval: 10 * time.Second},
	}
}

// KeyError is a configuration error at one key.
type KeyError struct {
	Key    string // dotted path, e.g. clock.interval or phc.devices[1]
	Reason string
	Line   int // line in the file, 0 when unknown
	File   string
}

func (e *KeyError) Error() string {
	loc := e.File
	if loc == "" {
		loc = "config"
	}
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Reason)
}

func keyErr(key, format string, a ...any) error {
	return &KeyError{Key: key, Reason: fmt.Sprintf(format, a...)}
}

// Validate checks every section and returns the first problem as a *KeyError.
func (c *Config) Validate() error {
	for _, v := range []func() error{c.Paths.Validate, c.Log.Validate, c.Clock.Validate, c.PHC.Validate, c.Output.Validate, c.SelfMetrics.Validate} {
		if err := v(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the paths section.
func (p *PathsConfig) Validate() error {
	for _, kv := range [][2]string{{"paths.sys", p.Sys}, {"paths.dev", p.Dev}, {"paths.run", p.Run}} {
		if kv[1] == "" {
			return keyErr(kv[0], "must not be empty")
		}
	}
	return nil
}

// Validate checks the log section.
func (l *LogConfig) Validate() error {
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		return keyErr("log.level", "%q is not one of debug, info, warn, error", l.Level)
	}
	if l.Format != "text" && l.Format != "json" {
		return keyErr("log.format", "%q is not text or json", l.Format)
	}
	return nil
}

// Validate checks the clock section.
func (c *ClockConfig) Validate() error {
	if err := positive("clock.interval", c.Interval); err != nil {
		return err
	}
	ref, err := timebase.ParseDomain(c.Reference)
	if _, sys := timebase.SystemClockFor(ref); err != nil || !sys {
		return keyErr("clock.reference", "%q is not a system clock (realtime, tai, monotonic, monotonic_raw, boottime)", c.Reference)
	}
	for i, name := range c.Clocks {
		d, err := timebase.ParseDomain(name)
		if _, sys := timebase.SystemClockFor(d); err != nil || !sys {
			return keyErr(fmt.Sprintf("clock.clocks[%d]", i), "%q is not a system clock (realtime, tai, monotonic, monotonic_raw, boottime)", name)
		}
		if d == ref {
			return keyErr(fmt.Sprintf("clock.clocks[%d]", i), "%q is the reference clock itself", name)
		}
	}
	if c.StepThreshold <= 0 {
		return keyErr("clock.step_threshold", "must be positive, got %s", c.StepThreshold)
	}
	if c.MaxSlewPPM < 0 || c.MaxSlewPPM > 1e6 {
		return keyErr("clock.max_slew_ppm", "must be within 0..1000000, got %g", c.MaxSlewPPM)
	}
	return nil
}

// Validate checks the phc section.
func (p *PHCConfig) Validate() error {
	if err := positive("phc.interval", p.Interval); err != nil {
		return err
	}
	if p.Samples < 1 || p.Samples > phc.MaxSamples {
		return keyErr("phc.samples", "must be within 1..%d (PTP_MAX_SAMPLES), got %d", phc.MaxSamples, p.Samples)
	}
	if _, err := phc.ParseMethod(p.Method); err != nil {
		return keyErr("phc.method", "%v", err)
	}
	if len(p.Against) == 0 {
		return keyErr("phc.against", "needs at least one system clock")
	}
	for i, name := range p.Against {
		d, err := timebase.ParseDomain(name)
		if err != nil || (d != timebase.DomainRealtime && d != timebase.DomainMonotonicRaw && d != timebase.DomainMonotonic) {
			return keyErr(fmt.Sprintf("phc.against[%d]", i), "%q: a PHC is read against realtime, monotonic or monotonic_raw", name)
		}
	}
	if p.Window < 2 {
		return keyErr("phc.window", "must be at least 2 samples, got %d", p.Window)
	}
	for i, d := range p.Devices {
		if d == "" {
			return keyErr(fmt.Sprintf("phc.devices[%d]", i), "must not be empty")
		}
	}
	return nil
}

// Validate checks the output section.
func (o *OutputConfig) Validate() error {
	if !o.Stdout && o.File == "" {
		return keyErr("output", "nowhere to write: set stdout: true or a file")
	}
	return nil
}

// Validate checks the self_metrics section.
func (s *SelfMetricsConfig) Validate() error {
	return positive("self_metrics.interval", s.Interval)
}

func positive(key string, d time.Duration) error {
	if d <= 0 {
		return keyErr(key, "must be positive, got %s", d)
	}
	return nil
}

// Preflight checks the configuration against the machine: devices it names must
// exist. Config check and run both call it.
func (c *Config) Preflight() error {
	if !c.PHC.Enabled {
		return nil
	}
	for i, d := range c.PHC.Devices {
		if _, err := os.Stat(d); err != nil {
			return keyErr(fmt.Sprintf("phc.devices[%d]", i), "%s: %v", d, errors.Unwrap(err))
		}
	}
	for i, name := range c.PHC.Interfaces {
		if _, err := os.Stat(c.Paths.Sys + "/class/net/" + name); err != nil {
			return keyErr(fmt.Sprintf("phc.interfaces[%d]", i), "no network interface %q", name)
		}
	}
	return nil
}
