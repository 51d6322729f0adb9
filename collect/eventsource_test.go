package collect_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/record"
)

// Every event is either shipped at its own time or counted: received =
// collected + ring drops, and the kernel's losses are counted apart.
func TestEventSourceAccountsForEveryEvent(t *testing.T) {
	p := &collecttest.ScriptedProducer{Bursts: [][]collecttest.Tick{collecttest.Ticks(0, 40), collecttest.Ticks(40, 40)}, Lost: 7}
	s := collecttest.NewTickSource(t, p, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Queue().Received() < 80 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b := &collect.Batch{Host: "h"}
	if err := s.Collect(ctx, b); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if !p.Stopped.Load() {
		t.Fatal("Run returned before its producer")
	}
	f := s.SelfFields()
	get := func(k string) uint64 {
		v, ok := collecttest.Field(f, k)
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
	if err := s.Collect(ctx, &collect.Batch{}); !errors.Is(err, collect.ErrNoData) {
		t.Fatalf("empty collection: %v", err)
	}
}

// A failing reader is run again after a back-off and its failures are
// reported once each, then it delivers.
func TestEventSourceSurvivesProducerFailures(t *testing.T) {
	p := &collecttest.ScriptedProducer{Fail: 3, Bursts: [][]collecttest.Tick{collecttest.Ticks(0, 5)}}
	s := collecttest.NewTickSource(t, p, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Queue().Received() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b := &collect.Batch{}
	err := s.Collect(ctx, b)
	cancel()
	<-done
	if err == nil || errors.Is(err, collect.ErrNoData) {
		t.Fatalf("the reader's failure was not reported: %v", err)
	}
	if len(b.Records) != 5 {
		t.Fatalf("%d records after the reader recovered, want 5", len(b.Records))
	}
	f := s.SelfFields()
	if v, _ := collecttest.Field(f, "read_errors"); v.U != 3 {
		t.Fatalf("read_errors %d, want 3", v.U)
	}
	if v, _ := collecttest.Field(f, "reader_restarts"); v.U != 3 {
		t.Fatalf("reader_restarts %d, want 3", v.U)
	}
}

func TestEventQueuePutDoesNotAllocate(t *testing.T) {
	s := collecttest.NewTickSource(t, &collecttest.ScriptedProducer{}, 1024)
	batch := collecttest.Ticks(0, 16)
	out := make([]collecttest.Tick, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Queue().Put(batch)
		s.Queue().Put1(batch[0])
		s.Queue().Get(out)
		s.Queue().Get(out[:1])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per put", allocs)
	}
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
func (s *scripted) Collect(ctx context.Context, b *collect.Batch) error {
	b.Add("m", int64(s.n), nil, record.Int("v", 1))
	err := s.errs[s.n]
	s.n++
	return err
}
func (s *scripted) SelfFields() []record.Field { return []record.Field{record.Int("own", int64(s.n))} }

// collect.Counted counts every collection by its outcome and keeps the last error
// and the source's own fields.
func TestCountedCountsCollections(t *testing.T) {
	c := &collect.Counted{Source: &scripted{errs: []error{nil, collect.ErrNoData, errors.New("device gone"), nil}}}
	b := &collect.Batch{}
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

// tickDecoder puts n events; it counts its After calls and its Close.
type tickDecoder struct {
	n             int
	afters, close int
}

func (d *tickDecoder) Produce(ctx context.Context, q *collect.EventQueue[int64]) error {
	for i := range d.n {
		q.Put1(int64(i + 1))
	}
	<-ctx.Done()
	return nil
}
func (d *tickDecoder) Emit(b *collect.Batch, e *int64) { b.Add("tick", *e, nil, record.Int("v", *e)) }
func (d *tickDecoder) Self() []record.Field {
	return []record.Field{record.Int("afters", int64(d.afters))}
}
func (d *tickDecoder) After(b *collect.Batch, events int) error {
	d.afters++
	return nil
}
func (d *tickDecoder) Close() error { d.close++; return nil }

// Decode wires a decoder's methods: its events are emitted, its After runs
// once per collection, its Self follows the queue's counts, and Close closes it.
func TestDecodeWiresTheDecoder(t *testing.T) {
	d := &tickDecoder{n: 3}
	s, err := collect.Decode("tick", time.Second, 8, d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for deadline := time.Now().Add(5 * time.Second); s.Queue().Received() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	var b collect.Batch
	if err := s.Collect(ctx, &b); err != nil || len(b.Records) != 3 || d.afters != 1 {
		t.Errorf("Collect: %v, %d records, %d afters; want nil, 3, 1", err, len(b.Records), d.afters)
	}
	f := s.SelfFields()
	if last := f[len(f)-1]; last.Key != "afters" {
		t.Errorf("last self field %q, want the decoder's afters", last.Key)
	}
	cancel()
	<-done
	if err := s.Close(); err != nil || d.close != 1 {
		t.Errorf("Close: %v, closed %d times", err, d.close)
	}
}
