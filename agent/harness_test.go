package agent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/sink"
)

// newWithSources is New with given sources and a given sink, for tests.
func newWithSources(cfg Config, log *slog.Logger, out sink.Sink, srcs ...collect.Source) *Agent {
	a := bare(cfg, log, out, cfg.Host)
	a.add(srcs...)
	return a
}

// closeCheck is an event source whose Close checks that its reader stopped.
type closeCheck struct {
	*collect.EventSource[collecttest.Tick]
	p      *collecttest.ScriptedProducer
	closed bool
	early  bool
}

func (c *closeCheck) Close() error {
	c.closed = true
	c.early = !c.p.Stopped.Load()
	return nil
}

// The agent runs a source's reader under its own context, ships what the
// reader queued after the last collection, and closes the source only after
// the reader returned.
func TestAgentRunsReadersUnderItsContext(t *testing.T) {
	// The events come after the first collection and before the next (1 s).
	p := &collecttest.ScriptedProducer{Bursts: [][]collecttest.Tick{collecttest.Ticks(0, 3)}, Delay: 100 * time.Millisecond}
	src := &closeCheck{EventSource: collecttest.NewTickSource(t, p, 16), p: p}
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	out := &memSink{}
	a := newWithSources(cfg, quietLog(), out, src)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Runs.Load() != 1 {
		t.Fatalf("producer ran %d times, want 1", p.Runs.Load())
	}
	if !src.closed || src.early {
		t.Fatalf("closed %v, before its reader stopped %v", src.closed, src.early)
	}
	if got := out.count("tick"); got != 3 {
		t.Fatalf("%d tick records, want 3", got)
	}
}
