package agent

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/hca"
)

// TimeAPIConfig is the time API (judging.Publisher, package timeapi): a
// shared-memory segment in which the agent publishes, after every judged
// sample, the true time as an interval for applications to read in tens
// of nanoseconds: section "system" (the system clock's references' vote),
// and "global" (the HCA global timeline) with the hca section.
type TimeAPIConfig struct {
	Enabled bool `yaml:"enabled"`
	// Path is the segment file; a relative one is under paths.runtime_dir.
	Path string `yaml:"path"`
	// Mode is the file's permissions, octal ("0644"): who may read it may
	// read the time. The agent alone writes it.
	Mode string `yaml:"mode"`
	// MaxAge is how long a section stays readable after the agent's last
	// update: an agent stopped (SIGSTOP), stalled or killed leaves readers
	// a bound that grows, then void after at most this.
	MaxAge time.Duration `yaml:"max_age"`
}

func (t *TimeAPIConfig) defaults() {
	*t = TimeAPIConfig{Enabled: true, Path: "time.shm", Mode: "0644", MaxAge: 10 * time.Second}
}

// file is the segment's path.
func (t *TimeAPIConfig) file(paths PathsConfig) string {
	if filepath.IsAbs(t.Path) {
		return t.Path
	}
	return filepath.Join(paths.Runtime(), t.Path)
}

// perm is Mode as permission bits.
func (t *TimeAPIConfig) perm() (os.FileMode, error) {
	if v, err := strconv.ParseUint(t.Mode, 8, 32); err == nil && v <= 0o777 {
		return os.FileMode(v), nil
	}
	return 0, fmt.Errorf("%q is not an octal file mode such as 0644", t.Mode)
}

// minMaxAge: the agent republishes every judge tick (judging.Tick); a
// section void sooner than a few ticks would flicker while the agent runs.
const minMaxAge = time.Second

func (t *TimeAPIConfig) check(p *problems) {
	if !t.Enabled {
		return
	}
	if t.Path == "" {
		p.Add("timeapi.path", "must be set (a path, or a name under paths.runtime_dir)")
	}
	if mode, err := t.perm(); err != nil {
		p.Add("timeapi.mode", "%v", err)
	} else if mode&0o400 == 0 {
		p.Add("timeapi.mode", "%s: the owner cannot read it: set at least 0600", t.Mode)
	}
	if t.MaxAge < minMaxAge {
		p.Add("timeapi.max_age", "must be at least %s (the agent updates every %s; a shorter age voids the time while the agent runs), got %s", minMaxAge, judging.Tick, t.MaxAge)
	}
}

// board checks that the segment's directory exists.
func (t *TimeAPIConfig) board(paths PathsConfig, p *problems) {
	if t.Enabled && t.Path != "" {
		p.Exists("timeapi.path", "no directory for the time segment", filepath.Dir(t.file(paths)))
	}
}

// timeAPISection is the timeapi section's entry in the table (config.go):
// the agent's own, it builds no source.
var timeAPISection = section{key: "timeapi", of: func(c *Config) sectionConfig { return &c.TimeAPI }}

// TimeAPIPath is the time segment's path (timeapi.path under
// paths.runtime_dir when relative), for readers such as `monagent time`.
func (c *Config) TimeAPIPath() string { return c.TimeAPI.file(c.Paths) }

// openTimePub opens the time API's segment (nil, nil when the section is
// off) with g, the agent's model of the HCA global timeline.
func openTimePub(cfg *Config, g *hca.Global, log *slog.Logger) (*judging.Publisher, error) {
	t := &cfg.TimeAPI
	if !t.Enabled {
		return nil, nil
	}
	mode, err := t.perm()
	if err != nil {
		return nil, keyErr("timeapi.mode", "%v", err)
	}
	p, err := judging.OpenPublisher(t.file(cfg.Paths), mode, t.MaxAge, g, cfg.HCA.Enabled, cfg.HCA.Rank == 0, log)
	if err != nil {
		return nil, keyErr("timeapi.path", "%v", err)
	}
	return p, nil
}
