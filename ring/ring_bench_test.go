package ring

import (
	"sync"
	"testing"
)

// BenchmarkPutGet: one record in and out on one goroutine.
func BenchmarkPutGet(b *testing.B) {
	r, _ := New[event](1024)
	out := make([]event, 1)
	b.ReportAllocs()
	for b.Loop() {
		r.Put(event{seq: 1})
		r.Get(out)
	}
}

// BenchmarkBatch64: 64 records in as one batch and out as one.
func BenchmarkBatch64(b *testing.B) {
	r, _ := New[event](1024)
	in, out := make([]event, 64), make([]event, 64)
	b.ReportAllocs()
	for b.Loop() {
		r.PutBatch(in)
		r.Get(out)
	}
}

// BenchmarkSPSC: records per second from a producer goroutine to a consumer
// goroutine, batches of 16 both ways; b.N records.
func BenchmarkSPSC(b *testing.B) {
	r, _ := New[event](4096)
	b.ReportAllocs()
	var wg sync.WaitGroup
	wg.Add(1)
	n := b.N
	go func() {
		defer wg.Done()
		batch := make([]event, 16)
		for sent := 0; sent < n; {
			k := min(16, n-sent)
			sent += r.PutBatch(batch[:k])
			r.dropped.Store(0) // a full ring here is back-pressure, not loss
		}
	}()
	out := make([]event, 16)
	for got := 0; got < n; {
		got += r.Get(out)
	}
	wg.Wait()
}
