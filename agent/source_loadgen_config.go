package agent

import (
	"time"

	"github.com/monagent/monagent/conf"
)

// LoadgenConfig is a synthetic source of sequence-numbered points
// (source_loadgen.go), for checking delivery end to end and measuring
// throughput.
type LoadgenConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Rate     int           `yaml:"rate"` // points per second
	Interval time.Duration `yaml:"interval"`
}

func (l *LoadgenConfig) defaults() {
	*l = LoadgenConfig{Rate: 1000, Interval: 100 * time.Millisecond}
}

func (l *LoadgenConfig) check(p *problems) {
	if !l.Enabled {
		return
	}
	conf.Within(p, "loadgen.rate", l.Rate, 1, 10_000_000, " points/s")
	p.Interval("loadgen.interval", l.Interval)
}
