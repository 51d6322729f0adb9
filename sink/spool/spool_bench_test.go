package spool

import (
	"testing"
	"time"
)

// BenchmarkAppend is the producer's cost: encoding points into the spool buffer
// while the flusher writes them to disk in the background (default intervals).
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
			for b.Loop() {
				s.Append(batch)
			}
			b.StopTimer()
			elapsed := b.Elapsed()
			s.Sync()
			st := s.Stats()
			b.ReportMetric(float64(b.N*len(batch))/elapsed.Seconds(), "points/s")
			b.ReportMetric(float64(st.DroppedBuffer), "dropped")
		})
	}
}

// BenchmarkAppendSustained appends and then waits until the flusher has written
// everything: the rate the disk side sustains, not just the producer's.
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
	s.Sync()
	b.ReportMetric(float64(b.N*len(batch))/time.Since(start).Seconds(), "points/s")
}
