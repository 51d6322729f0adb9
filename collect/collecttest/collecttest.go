// Package collecttest has what tests of event sources share: a scripted
// producer of numbered ticks, an event source over it, and helpers to run a
// source's reader and read its self-metrics.
package collecttest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
)

// Tick is a numbered event at NS.
type Tick struct {
	NS  int64
	Seq uint32
}

// ScriptedProducer emits events in bursts and reports kernel losses; it fails
// the first Fail times it runs.
type ScriptedProducer struct {
	Fail    int
	Delay   time.Duration // before the bursts
	Runs    atomic.Int32
	Bursts  [][]Tick
	Lost    uint64
	Stopped atomic.Bool
}

// Produce implements collect.Producer.
func (p *ScriptedProducer) Produce(ctx context.Context, q *collect.EventQueue[Tick]) error {
	if int(p.Runs.Add(1)) <= p.Fail {
		return errors.New("device went away")
	}
	select {
	case <-ctx.Done():
	case <-time.After(p.Delay):
	}
	for _, b := range p.Bursts {
		q.Put(b)
	}
	q.Lost(p.Lost)
	<-ctx.Done()
	p.Stopped.Store(true)
	return nil
}

// Ticks are n ticks numbered from from.
func Ticks(from, n int) []Tick {
	out := make([]Tick, n)
	for i := range out {
		out[i] = Tick{NS: int64(1_000_000_000 + from + i), Seq: uint32(from + i)}
	}
	return out
}

// NewTickSource is an event source of ticks from p, shipping each as a
// tick record at its NS.
func NewTickSource(t testing.TB, p collect.Producer[Tick], ringSize int) *collect.EventSource[Tick] {
	t.Helper()
	s, err := collect.NewEventSource(collect.EventSourceConfig[Tick]{
		Name: "ticks", Ring: ringSize, Producer: p, MaxBackoff: 10 * time.Millisecond,
		Emit: func(b *collect.Batch, e *Tick) {
			b.Add("tick", e.NS, nil, record.Int("seq", int64(e.Seq)))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Field is the field key of fs.
func Field(fs []record.Field, key string) (record.Field, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f, true
		}
	}
	return record.Field{}, false
}

// Start runs an event source's reader; stop cancels it and waits until
// it returned.
func Start[E any](s *collect.EventSource[E]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	return func() { cancel(); <-done }
}

// Self returns the source's self-metrics field key.
func Self[E any](t testing.TB, s *collect.EventSource[E], key string) record.Field {
	t.Helper()
	f, ok := Field(s.SelfFields(), key)
	if !ok {
		t.Fatalf("no self-metric %s", key)
	}
	return f
}
