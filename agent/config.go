package agent

import (
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/conf"
)

// Config is monagent's configuration file. Each section's type, defaults,
// checks and board checks live in agent/source_<x>_config.go beside the
// source that uses it (agent/config_<x>.go for the agent's own sections, the
// library's package for the output and endpoint sections: spool, influx, http,
// notify), and are registered in sections; this file keeps only the top level.
type Config struct {
	Host        string            `yaml:"host"` // the host tag; default: the hostname
	Tags        TagsConfig        `yaml:"tags"` // the host's tags (rack, room): labels on /metrics
	Paths       PathsConfig       `yaml:"paths"`
	Log         LogConfig         `yaml:"log"`
	Clock       ClockConfig       `yaml:"clock"`
	PHC         PHCConfig         `yaml:"phc"`
	NTP         NTPConfig         `yaml:"ntp"`
	PTP         PTPConfig         `yaml:"ptp"`
	Sensors     SensorsConfig     `yaml:"sensors"`
	GPIO        GPIOConfig        `yaml:"gpio"`
	PPS         PPSConfig         `yaml:"pps"`
	GNSS        GNSSConfig        `yaml:"gnss"`
	Extts       ExttsConfig       `yaml:"extts"`
	Marker      MarkerConfig      `yaml:"marker"`
	HCA         HCAConfig         `yaml:"hca"`
	Loadgen     LoadgenConfig     `yaml:"loadgen"`
	Output      OutputConfig      `yaml:"output"`
	Spool       SpoolConfig       `yaml:"spool"`
	Influx      InfluxConfig      `yaml:"influx"`
	SelfMetrics SelfMetricsConfig `yaml:"self_metrics"`
	Memory      MemoryConfig      `yaml:"memory"`
	HTTP        HTTPConfig        `yaml:"http"`
	Notify      NotifyConfig      `yaml:"notify"`
	TimeAPI     TimeAPIConfig     `yaml:"timeapi"`

	// src is the file the configuration was parsed from (nil for Default),
	// so that checks run after Parse (Preflight, Board) name file and line.
	src *conf.Source
}

// sectionConfig is what every section type implements, on its pointer.
type sectionConfig interface {
	// defaults sets every key of the section to its default. It is the only
	// place defaults are set: Default calls it for the sections, and list
	// elements (ntp.servers[i], sensors.buffers[i]) call their own defaults
	// when they are decoded, so a key left out keeps its default and a key
	// that is set is checked, never silently replaced.
	defaults()
	// check appends every problem of the section; it never modifies it.
	check(p *problems)
}

// boardChecker is a section with settings only the board can confirm: a
// device, a network interface, a token file. Off the board they are warnings
// (config check); run refuses to start on those of a fatal section.
type boardChecker interface {
	board(paths PathsConfig, p *problems)
}

// adviser is a section with settings that are allowed but worth a word in
// config check (a warning), which run never refuses.
type adviser interface {
	advise(p *problems)
}

// section is one entry of the table: a top-level key of the configuration
// file, the section inside a Config, whether run refuses to start when its
// board checks fail, and the sources it builds (none for the agent's own
// sections: paths, log, output, spool, influx, self_metrics, memory). Each
// entry is defined where its source lives (source_<x>.go), or beside the
// agent's own section types.
type section struct {
	key     string                      // the top-level YAML key
	of      func(*Config) sectionConfig // the section inside a Config
	fatal   bool                        // run does not start when its board checks fail
	sources []sourceKind                // what the section builds, in order
	memory  []memoryUse                 // the buffers its sources hold (config_memory.go)
}

// sourceKind builds the sources of one kind when its section enables them.
type sourceKind struct {
	name    string
	enabled func(*Config) bool
	build   func(*Env) ([]collect.Source, error)
}

// sections is the table, in the order the sections are checked and their
// sources built. A new source adds its section type (source_<x>_config.go), a
// field in Config, its entry beside its source (source_<x>.go) and one line here;
// TestSectionTableCoversConfig and TestEverySectionBuildsOrIsTheAgents keep
// the table and Config in step.
func sections() []section {
	return []section{
		pathsSection, logSection, tagsSection,
		clockSection, phcSection, ntpSection, ptpSection, sensorsSection, gpioSection,
		ppsSection, gnssSection, exttsSection, markerSection, hcaSection, loadgenSection,
		outputSection, spoolSection, influxSection, selfMetricsSection, memorySection,
		httpSection, notifySection, timeAPISection,
	}
}

// Default returns the configuration used for every key a file leaves out.
func Default() Config {
	var c Config
	for _, s := range sections() {
		s.of(&c).defaults()
	}
	return c
}

// Validate checks every section. It returns nil or Problems, every problem
// of every section (errors.As finds the first *KeyError).
func (c *Config) Validate() error {
	var p problems
	for _, s := range sections() {
		s.of(c).check(&p)
	}
	return c.src.Locate(p.Problems).Err()
}

// Preflight checks the configuration against the machine: devices and
// interfaces it names must exist, the InfluxDB token file must be readable.
// run calls it and refuses to start on any problem; config check reports the
// same findings, and more, as warnings (Board).
func (c *Config) Preflight() error {
	var p problems
	for _, s := range sections() {
		if b, ok := s.of(c).(boardChecker); ok && s.fatal {
			b.board(c.Paths, &p)
		}
	}
	return c.src.Locate(p.Problems).Err()
}

// Board returns, as warnings, every setting this machine cannot confirm: the
// ones Preflight checks and the devices and interfaces the other sources
// open. On the board they are real problems; checked elsewhere they only say
// which settings need the board.
func (c *Config) Board() Problems {
	var p problems
	for _, s := range sections() {
		if b, ok := s.of(c).(boardChecker); ok {
			b.board(c.Paths, &p)
		}
	}
	for _, ke := range p.Problems {
		ke.Warning = true
		ke.Reason = "needs the board: " + ke.Reason
	}
	var a problems
	for _, s := range sections() {
		if ad, ok := s.of(c).(adviser); ok {
			ad.advise(&a)
		}
	}
	c.adviseCrossCheck(&a)
	for _, ke := range a.Problems {
		ke.Warning = true
	}
	return c.src.Locate(append(p.Problems, a.Problems...))
}

// KeyError is a configuration problem at one key; Problems every problem
// of a file, in the order of its lines (package conf).
type (
	KeyError = conf.KeyError
	Problems = conf.Problems
)

func keyErr(key, format string, a ...any) error { return conf.KeyErr(key, format, a...) }

// validate is a section's Validate: every problem its check finds, or nil.
func validate(c interface{ check(*problems) }) error {
	var p problems
	c.check(&p)
	return p.Err()
}

// problems collects the problems of a configuration; the checks append to it
// rather than stop at the first.
type problems = conf.List

// Place gives a problem found while building the agent from this
// configuration (a *KeyError, or Problems, perhaps wrapped) its file and
// line, and returns it: one line naming file, line, key and reason.
func (c *Config) Place(err error) error { return c.src.Place(err) }
