package agent

import (
	"context"
	"errors"
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
	b := &Batch{host: "h"}
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

// closeCheck is an event source whose Close checks that its reader stopped.
type closeCheck struct {
	*EventSource[tick]
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

func TestEventQueuePutDoesNotAllocate(t *testing.T) {
	s := newTickSource(t, &scriptedProducer{}, 1024)
	batch := ticks(0, 16)
	out := make([]tick, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Queue().Put(batch)
		s.Queue().Put1(batch[0])
		s.q.ring.Get(out)
		s.q.ring.Get(out[:1])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per put", allocs)
	}
}

// seriesTime moves a time its series already has to the first free
// nanosecond after it, counted; a time that collides with nothing stays,
// however it stands to the others (barely before the last, long before it,
// equal to a record of another series).
func TestSeriesTime(t *testing.T) {
	var st seriesTime
	var c timeCounts
	for i, tc := range []struct{ in, want int64 }{
		{1000, 1000}, {1000, 1001}, {1000, 1002}, {1500, 1500},
		{1499, 1499},        // before the last, but free: kept (it moved to 1501 before)
		{1001, 1003},        // equal to a moved one: past 1002 too
		{1000, 1004},        // equal to an earlier, not the last
		{1500 - 2000, -500}, // a clock stepped back: kept
		{-500, -499},
	} {
		if got := st.place(tc.in, &c); got != tc.want {
			t.Fatalf("step %d: %d -> %d, want %d", i, tc.in, got, tc.want)
		}
	}
	if c.bumps != 5 || c.unchecked != 0 {
		t.Fatalf("%+v, want 5 bumps and nothing unchecked", c)
	}
}

// Past seriesRecent times a series lets its oldest go: a time after every
// one let go is still checked exactly; one at or before the latest let go
// cannot be, and is shipped as it is and counted.
func TestSeriesTimeLetsGoAndCounts(t *testing.T) {
	last := int64(100 + 10*seriesRecent) // 100, 110, ... last placed: 100 let go
	for _, tc := range []struct {
		in, want         int64
		bumps, unchecked uint64
	}{
		{110, 111, 1, 0},       // held: moved, and 111 is after 100
		{100, 100, 0, 1},       // the one let go: not seen, counted
		{95, 95, 0, 1},         // before it: unknown, counted
		{105, 105, 0, 0},       // after every time let go, free
		{last, last + 1, 1, 0}, // the last
	} {
		var st seriesTime
		var c timeCounts
		for ns := int64(100); ns <= last; ns += 10 {
			st.place(ns, &c)
		}
		if c != (timeCounts{}) || !st.letGone || st.gone != 100 {
			t.Fatalf("placing %d in order: %+v, let go %v (%d)", seriesRecent+1, c, st.letGone, st.gone)
		}
		if got := st.place(tc.in, &c); got != tc.want || c != (timeCounts{tc.bumps, tc.unchecked}) {
			t.Errorf("%d -> %d %+v, want %d (%d bumps, %d unchecked)", tc.in, got, c, tc.want, tc.bumps, tc.unchecked)
		}
	}
}

// Placing a time allocates nothing: it runs for every event.
func TestSeriesTimeDoesNotAllocate(t *testing.T) {
	var st seriesTime
	var c timeCounts
	var ns int64
	if a := testing.AllocsPerRun(1000, func() { ns++; st.place(ns/2, &c) }); a != 0 {
		t.Fatalf("%v allocations per record", a)
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
