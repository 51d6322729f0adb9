package gpio

import (
	"testing"

	"github.com/monagent/monagent/ring"
)

// batch64 is 64 events as one read(2) of a request returns them.
func batch64() []byte {
	var buf []byte
	for i := range 64 {
		s := uint32(i + 1)
		buf = AppendEvent(buf, Event{TimestampNS: 1_700_000_000_000_000_000 + int64(i)*1000, Offset: 17, Seqno: s, LineSeqno: s, Edge: Edge(1 + i%2)})
	}
	return buf
}

func reportPerEvent(b *testing.B, events int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

func BenchmarkDecodeEvents64(b *testing.B) {
	buf, evs := batch64(), make([]Event, 64)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if n, err := DecodeEvents(evs, buf, ClockMonotonic); n != 64 || err != nil {
			b.Fatal(n, err)
		}
	}
	reportPerEvent(b, 64)
}

// BenchmarkDecodeRing64: decode, account losses, push into the ring the
// agent drains, and pop again (producer and consumer on one goroutine).
func BenchmarkDecodeRing64(b *testing.B) {
	buf, evs, out := batch64(), make([]Event, 64), make([]Event, 64)
	r, err := ring.New[Event](4096)
	if err != nil {
		b.Fatal(err)
	}
	var loss LossTracker
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		n, err := DecodeEvents(evs, buf, ClockMonotonic)
		if n != 64 || err != nil {
			b.Fatal(n, err)
		}
		for i := range n {
			loss.Observe(&evs[i])
		}
		if r.PutBatch(evs[:n]) != n || r.Get(out) != n {
			b.Fatal("ring")
		}
	}
	reportPerEvent(b, 64)
}
