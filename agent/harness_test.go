package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
)

type tick struct {
	ns  int64
	seq uint32
}

// scriptedProducer emits events in bursts and reports kernel losses; it fails
// the first `fail` times it runs.
type scriptedProducer struct {
	fail    int
	delay   time.Duration // before the bursts
	runs    atomic.Int32
	bursts  [][]tick
	lost    uint64
	stopped atomic.Bool
}

func (p *scriptedProducer) Produce(ctx context.Context, q *collect.EventQueue[tick]) error {
	if int(p.runs.Add(1)) <= p.fail {
		return errors.New("device went away")
	}
	select {
	case <-ctx.Done():
	case <-time.After(p.delay):
	}
	for _, b := range p.bursts {
		q.Put(b)
	}
	q.Lost(p.lost)
	<-ctx.Done()
	p.stopped.Store(true)
	return nil
}

func ticks(from, n int) []tick {
	out := make([]tick, n)
	for i := range out {
		out[i] = tick{ns: int64(1_000_000_000 + from + i), seq: uint32(from + i)}
	}
	return out
}

func newTickSource(t *testing.T, p collect.Producer[tick], ringSize int) *collect.EventSource[tick] {
	t.Helper()
	s, err := collect.NewEventSource(collect.EventSourceConfig[tick]{
		Name: "ticks", Ring: ringSize, Producer: p, MaxBackoff: 10 * time.Millisecond,
		Emit: func(b *collect.Batch, e *tick) {
			b.Add("tick", e.ns, nil, record.Int("seq", int64(e.seq)))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func field(fs []record.Field, key string) (record.Field, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f, true
		}
	}
	return record.Field{}, false
}

// closeCheck is an event source whose Close checks that its reader stopped.
type closeCheck struct {
	*collect.EventSource[tick]
	p      *scriptedProducer
	closed bool
	early  bool
}

func (c *closeCheck) Close() error {
	c.closed = true
	c.early = !c.p.stopped.Load()
	return nil
}

// The agent runs a source's reader under its own context, ships what the
// reader queued after the last collection, and closes the source only after
// the reader returned.
func TestAgentRunsReadersUnderItsContext(t *testing.T) {
	// The events come after the first collection and before the next (1 s).
	p := &scriptedProducer{bursts: [][]tick{ticks(0, 3)}, delay: 100 * time.Millisecond}
	src := &closeCheck{EventSource: newTickSource(t, p, 16), p: p}
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	out := &memSink{}
	a := newWithSources(cfg, quietLog(), out, src)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if p.runs.Load() != 1 {
		t.Fatalf("producer ran %d times, want 1", p.runs.Load())
	}
	if !src.closed || src.early {
		t.Fatalf("closed %v, before its reader stopped %v", src.closed, src.early)
	}
	if got := out.count("tick"); got != 3 {
		t.Fatalf("%d tick records, want 3", got)
	}
}

// startEvents runs an event source's reader; stop cancels it and waits until
// it returned.
func startEvents[E any](s *collect.EventSource[E]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	return func() { cancel(); <-done }
}

// selfOf returns the source's self-metrics field key.
func selfOf[E any](t *testing.T, s *collect.EventSource[E], key string) record.Field {
	t.Helper()
	f, ok := field(s.SelfFields(), key)
	if !ok {
		t.Fatalf("no self-metric %s", key)
	}
	return f
}
