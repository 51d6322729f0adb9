package collect_test

import (
	"testing"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/record"
)

// BenchmarkEventQueuePut16 is the reader's cost per batch of 16 events (one
// GPIO kfifo's worth) into the ring, drained by the consumer.
func BenchmarkEventQueuePut16(b *testing.B) {
	s, err := collect.NewEventSource(collect.EventSourceConfig[collecttest.Tick]{Name: "bench", Ring: 4096,
		Producer: &collecttest.ScriptedProducer{}, Emit: func(*collect.Batch, *collecttest.Tick) {}})
	if err != nil {
		b.Fatal(err)
	}
	batch := collecttest.Ticks(0, 16)
	out := make([]collecttest.Tick, 16)
	b.ReportAllocs()
	for b.Loop() {
		s.Queue().Put(batch)
		s.Queue().Get(out)
	}
}

// BenchmarkEventSourceCollect is the collection's cost per event: drain the
// ring and emit one record with one tag and two fields.
func BenchmarkEventSourceCollect(b *testing.B) {
	tags := []record.Tag{{Key: "line", Value: "17"}}
	s, err := collect.NewEventSource(collect.EventSourceConfig[collecttest.Tick]{Name: "bench", Ring: 4096,
		Producer: &collecttest.ScriptedProducer{},
		Emit: func(bt *collect.Batch, e *collecttest.Tick) {
			bt.Add("gpio_edge", e.NS, tags, record.Int("seq", int64(e.Seq)), record.Int("kernel_ns", e.NS))
		}})
	if err != nil {
		b.Fatal(err)
	}
	batch := collecttest.Ticks(0, 256)
	bt := &collect.Batch{Host: "bench", Records: make([]record.Record, 0, 256)}
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
