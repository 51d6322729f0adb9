package collect

import (
	"testing"

	"github.com/monagent/monagent/record"
)

// BenchmarkEventQueuePut16 is the reader's cost per batch of 16 events (one
// GPIO kfifo's worth) into the ring, drained by the consumer.
func BenchmarkEventQueuePut16(b *testing.B) {
	s, err := NewEventSource(EventSourceConfig[tick]{Name: "bench", Ring: 4096,
		Producer: &scriptedProducer{}, Emit: func(*Batch, *tick) {}})
	if err != nil {
		b.Fatal(err)
	}
	batch := ticks(0, 16)
	out := make([]tick, 16)
	b.ReportAllocs()
	for b.Loop() {
		s.Queue().Put(batch)
		s.q.ring.Get(out)
	}
}

// BenchmarkEventSourceCollect is the collection's cost per event: drain the
// ring and emit one record with one tag and two fields.
func BenchmarkEventSourceCollect(b *testing.B) {
	tags := []record.Tag{{Key: "line", Value: "17"}}
	s, err := NewEventSource(EventSourceConfig[tick]{Name: "bench", Ring: 4096,
		Producer: &scriptedProducer{},
		Emit: func(bt *Batch, e *tick) {
			bt.Add("gpio_edge", e.ns, tags, record.Int("seq", int64(e.seq)), record.Int("kernel_ns", e.ns))
		}})
	if err != nil {
		b.Fatal(err)
	}
	batch := ticks(0, 256)
	bt := &Batch{Host: "bench", Records: make([]record.Record, 0, 256)}
	b.ReportAllocs()
	for b.Loop() {
		s.Queue().Put(batch)
		bt.Records = bt.Records[:0]
		if err := s.Collect(b.Context(), bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/event")
}
