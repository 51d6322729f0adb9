package collect

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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

func (p *scriptedProducer) Produce(ctx context.Context, q *EventQueue[tick]) error {
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

func newTickSource(t *testing.T, p Producer[tick], ringSize int) *EventSource[tick] {
	t.Helper()
	s, err := NewEventSource(EventSourceConfig[tick]{
		Name: "ticks", Ring: ringSize, Producer: p, MaxBackoff: 10 * time.Millisecond,
		Emit: func(b *Batch, e *tick) {
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

// Every event is either shipped at its own time or counted: received =
// collected + ring drops, and the kernel's losses are counted apart.
func TestEventSourceAccountsForEveryEvent(t *testing.T) {
	p := &scriptedProducer{bursts: [][]tick{ticks(0, 40), ticks(40, 40)}, lost: 7}
	s := newTickSource(t, p, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Queue().Received() < 80 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b := &Batch{Host: "h"}
	if err := s.Collect(ctx, b); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if !p.stopped.Load() {
		t.Fatal("Run returned before its producer")
	}
	f := s.SelfFields()
	get := func(k string) uint64 {
		v, ok := field(f, k)
		if !ok {
			t.Fatalf("no self field %s", k)
		}
		if v.Kind == record.KindInt {
			return uint64(v.I)
		}
		return v.U
	}
	if get("events") != 80 || get("ring_dropped") != 16 || get("events_collected") != 64 || get("kernel_lost") != 7 {
		t.Fatalf("counts: %+v", f)
	}
	if len(b.Records) != 64 {
		t.Fatalf("%d records, want 64", len(b.Records))
	}
	seen := map[int64]bool{}
	for i, r := range b.Records {
		if r.TimeNS != int64(1_000_000_000+i) || seen[r.TimeNS] {
			t.Fatalf("record %d at %d: not its event's time", i, r.TimeNS)
		}
		seen[r.TimeNS] = true
	}
	// A second collection with nothing new is "no data", not an error.
	if err := s.Collect(ctx, &Batch{}); !errors.Is(err, ErrNoData) {
		t.Fatalf("empty collection: %v", err)
	}
}

// A failing reader is run again after a back-off and its failures are
// reported once each, then it delivers.
func TestEventSourceSurvivesProducerFailures(t *testing.T) {
	p := &scriptedProducer{fail: 3, bursts: [][]tick{ticks(0, 5)}}
	s := newTickSource(t, p, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Queue().Received() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b := &Batch{}
	err := s.Collect(ctx, b)
	cancel()
	<-done
	if err == nil || errors.Is(err, ErrNoData) {
		t.Fatalf("the reader's failure was not reported: %v", err)
	}
	if len(b.Records) != 5 {
		t.Fatalf("%d records after the reader recovered, want 5", len(b.Records))
	}
	f := s.SelfFields()
	if v, _ := field(f, "read_errors"); v.U != 3 {
		t.Fatalf("read_errors %d, want 3", v.U)
	}
	if v, _ := field(f, "reader_restarts"); v.U != 3 {
		t.Fatalf("reader_restarts %d, want 3", v.U)
	}
}

func TestEventQueuePutDoesNotAllocate(t *testing.T) {
	s := newTickSource(t, &scriptedProducer{}, 1024)
	batch := ticks(0, 16)
	out := make([]tick, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Queue().Put(batch)
		s.Queue().Put1(batch[0])
		s.q.Get(out)
		s.q.Get(out[:1])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per put", allocs)
	}
}

// startEvents runs an event source's reader; stop cancels it and waits until
// it returned.
func startEvents[E any](s *EventSource[E]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	return func() { cancel(); <-done }
}

// selfOf returns the source's self-metrics field key.
func selfOf[E any](t *testing.T, s *EventSource[E], key string) record.Field {
	t.Helper()
	f, ok := field(s.SelfFields(), key)
	if !ok {
		t.Fatalf("no self-metric %s", key)
	}
	return f
}

// scripted is a source whose collections return the errors given, adding one
// record each, with a self-metric of its own.
type scripted struct {
	errs []error
	n    int
}

func (s *scripted) Name() string            { return "scripted" }
func (s *scripted) Interval() time.Duration { return time.Second }
func (s *scripted) Close() error            { return nil }
func (s *scripted) Collect(ctx context.Context, b *Batch) error {
	b.Add("m", int64(s.n), nil, record.Int("v", 1))
	err := s.errs[s.n]
	s.n++
	return err
}
func (s *scripted) SelfFields() []record.Field { return []record.Field{record.Int("own", int64(s.n))} }

// Counted counts every collection by its outcome and keeps the last error
// and the source's own fields.
func TestCountedCountsCollections(t *testing.T) {
	c := &Counted{Source: &scripted{errs: []error{nil, ErrNoData, errors.New("device gone"), nil}}}
	b := &Batch{}
	for range 4 {
		c.Collect(context.Background(), b)
	}
	want := map[string]string{"collections": "4", "records": "4", "errors": "1", "no_data": "1", "last_error": "device gone", "own": "4"}
	for _, f := range c.Fields() {
		v := fmt.Sprint(f.U)
		switch f.Kind {
		case record.KindInt:
			v = fmt.Sprint(f.I)
		case record.KindString:
			v = f.S
		}
		if w, ok := want[f.Key]; ok && v != w {
			t.Errorf("%s = %s, want %s", f.Key, v, w)
		}
		delete(want, f.Key)
	}
	if len(want) > 0 {
		t.Errorf("missing fields %v", want)
	}
}
