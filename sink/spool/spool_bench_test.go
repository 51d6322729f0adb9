package spool

import (
	"testing"
	"time"
)

// BenchmarkAppend is the producer's cost: encoding points into the spool buffer
// while the flusher writes them to disk in the background (default intervals).
// Appends that outrun the disk are dropped (counted): the rate counts only the
// points kept, and the timer runs until they are on disk (fsynced), so ns/op
// is the cost of an Append of 100 points including its share of the writing.
func BenchmarkAppend(b *testing.B) {
	for _, compress := range []bool{false, true} {
		name := "plain"
		if compress {
			name = "gzip"
		}
		b.Run(name, func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir(), Compress: compress, MaxBytes: 1 << 40, SegmentBytes: 64 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			batch := recs(0, 100)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Append(batch)
			}
			if err := s.Sync(); err != nil {
				b.Fatal(err)
			}
			elapsed := b.Elapsed()
			b.StopTimer()
			st := s.Stats()
			dropped := st.DroppedBuffer + st.DroppedDisk
			b.ReportMetric(float64(st.Appended-dropped)/elapsed.Seconds(), "kept-points/s")
			b.ReportMetric(100*float64(dropped)/float64(st.Appended), "dropped-%")
		})
	}
}

// BenchmarkAppendSustained appends and then waits until the flusher has written
// everything: the rate the disk side sustains, not just the producer's. Its
// MaxBuffer is large enough that nothing is dropped (checked).
func BenchmarkAppendSustained(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir(), MaxBytes: 1 << 40, SegmentBytes: 64 << 20, MaxBuffer: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := recs(0, 100)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		s.Append(batch)
	}
	if err := s.Sync(); err != nil {
		b.Fatal(err)
	}
	st := s.Stats()
	if d := st.DroppedBuffer + st.DroppedDisk; d > 0 {
		b.Fatalf("%d points dropped", d)
	}
	b.ReportMetric(float64(b.N*len(batch))/time.Since(start).Seconds(), "points/s")
}
