package agent

import (
	"os"
	"strings"
	"time"
)

// The agent's own sections: paths, log and self_metrics.

// PathsConfig moves the kernel's file systems, for tests and containers.
type PathsConfig struct {
	Sys string `yaml:"sys"`
	Dev string `yaml:"dev"`
	Run string `yaml:"run"`
	// RuntimeDir holds the agent's own sockets (e.g. the chrony client's). ""
	// means $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=), else the system's
	// temporary directory.
	RuntimeDir string `yaml:"runtime_dir"`
}

func (p *PathsConfig) defaults() {
	*p = PathsConfig{Sys: "/sys", Dev: "/dev", Run: "/run"}
}

// Runtime returns the directory for the agent's own sockets.
func (p PathsConfig) Runtime() string {
	if p.RuntimeDir != "" {
		return p.RuntimeDir
	}
	if d := os.Getenv("RUNTIME_DIRECTORY"); d != "" {
		// systemd may list several, colon-separated; the first is ours.
		return strings.Split(d, ":")[0]
	}
	return os.TempDir()
}

func (p *PathsConfig) check(ps *problems) {
	ps.NotEmpty("paths.sys", p.Sys)
	ps.NotEmpty("paths.dev", p.Dev)
	ps.NotEmpty("paths.run", p.Run)
}

// LogConfig sets the agent's log.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

func (l *LogConfig) defaults() {
	*l = LogConfig{Level: "info", Format: "text"}
}

// Validate checks the log section.
func (l *LogConfig) Validate() error { return validate(l) }

func (l *LogConfig) check(p *problems) {
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		p.Add("log.level", "%q is not one of debug, info, warn, error", l.Level)
	}
	if l.Format != "text" && l.Format != "json" {
		p.Add("log.format", "%q is not text or json", l.Format)
	}
}

// SelfMetricsConfig is the agent's own metrics.
type SelfMetricsConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
}

func (s *SelfMetricsConfig) defaults() {
	*s = SelfMetricsConfig{Enabled: true, Interval: 10 * time.Second}
}

func (s *SelfMetricsConfig) check(p *problems) {
	p.Interval("self_metrics.interval", s.Interval)
}

// The agent's own sections' entries in the table (config.go): they build no
// source.
var (
	pathsSection       = section{key: "paths", of: func(c *Config) sectionConfig { return &c.Paths }}
	logSection         = section{key: "log", of: func(c *Config) sectionConfig { return &c.Log }}
	selfMetricsSection = section{key: "self_metrics", of: func(c *Config) sectionConfig { return &c.SelfMetrics }}
)
