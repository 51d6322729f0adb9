package agent

import (
	"context"
	"strconv"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// loadgenSource emits sequence-numbered points at a fixed rate. A run tag (the
// agent's start time) and the seq field let a test or an operator check that
// every point arrived exactly once, and measure throughput end to end.
type loadgenSource struct {
	cfg    LoadgenConfig
	run    string
	seq    int64
	lastNS int64
	start  time.Time
	tags   []record.Tag
}

func buildLoadgen(env *Env) ([]collect.Source, error) {
	now := timebase.RealtimeNS()
	run := strconv.FormatInt(now, 10)
	return []collect.Source{&loadgenSource{cfg: env.Config.Loadgen, run: run, start: time.Now(), tags: []record.Tag{{Key: "run", Value: run}}}}, nil
}

func (l *loadgenSource) Name() string            { return "loadgen" }
func (l *loadgenSource) Interval() time.Duration { return l.cfg.Interval }
func (l *loadgenSource) Close() error            { return nil }

// Collect emits the points due since the start, so the rate holds whatever the
// ticker's jitter.
func (l *loadgenSource) Collect(ctx context.Context, b *collect.Batch) error {
	due := int64(time.Since(l.start).Seconds()*float64(l.cfg.Rate)) + 1
	now := timebase.RealtimeNS()
	for ; l.seq < due; l.seq++ {
		if now <= l.lastNS {
			now = l.lastNS + 1 // one point per nanosecond at most: unique timestamps
		}
		l.lastNS = now
		b.Add("monagent_loadgen", now, l.tags, record.Int("seq", l.seq))
	}
	return nil
}

// loadgenSection is the loadgen section's entry in the table (config.go).
var loadgenSection = section{key: "loadgen", of: func(c *Config) sectionConfig { return &c.Loadgen },
	sources: []sourceKind{{"loadgen", func(c *Config) bool { return c.Loadgen.Enabled }, buildLoadgen}}}
