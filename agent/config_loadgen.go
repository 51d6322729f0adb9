package agent

import "time"

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
	if l.Rate < 1 || l.Rate > 10_000_000 {
		p.Add("loadgen.rate", "must be within 1..10000000 points/s, got %d", l.Rate)
	}
	p.Positive("loadgen.interval", l.Interval)
}
