package spool

import (
	"fmt"
	"os"
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

// BenchmarkSlowFsync finds, for a disk whose every fsync takes 500 ms (a
// BeagleBone's SD card at its worst), the highest steady rate of gpio_event
// points (slowRecords, 187 bytes of line protocol each) that a spool keeps
// whole, for the default buffer (16 MiB) and a small one (2 MiB), with the
// default segments (4 MiB): gzip (the agent's default), gzip with a shipper
// acknowledging everything it reads (an InfluxDB that keeps up: the ack file
// is fsynced too), and plain.
//
// One op is a search, some 2 minutes: six runs of 5 s bisect between
// buffer/8 and 2 × buffer bytes a second; then runs long enough to end a
// segment (at least 30 s, at most 90 s), from the highest rate kept whole
// down by 10% until one drops nothing: the flush that ends a segment fsyncs
// more than the others, and with gzip a segment takes longer than 5 s to
// fill. It reports that rate (lossless-points/s), the lowest rate seen
// dropping (lossy-points/s), and of the run at that rate: the most
// line-protocol bytes accepted and not yet fsynced (unsafe-bytes: what a
// power cut loses), the most counted against the buffer (unwritten-bytes),
// the segments ended (rolls), the longest Append, and with a shipper the
// share of the kept points it had acknowledged when the run ended
// (shipped-%). A search of all six takes some 17 minutes, so it runs only
// with MONAGENT_BENCH_SLOWFSYNC=1 (the suite's one-iteration pass over
// every benchmark skips it), and never with -short:
//
//	MONAGENT_BENCH_SLOWFSYNC=1 go test -run '^$' -bench SlowFsync -benchmem ./sink/spool
func BenchmarkSlowFsync(b *testing.B) {
	if testing.Short() || os.Getenv("MONAGENT_BENCH_SLOWFSYNC") == "" {
		b.Skip("minutes of runs at a steady rate: set MONAGENT_BENCH_SLOWFSYNC=1")
	}
	for _, buf := range []int{16 << 20, 2 << 20} {
		for _, mode := range []struct {
			name           string
			compress, ship bool
		}{{"gzip", true, false}, {"gzip+shipper", true, true}, {"plain", false, false}} {
			b.Run(fmt.Sprintf("buffer=%dMiB/%s", buf>>20, mode.name), func(b *testing.B) {
				sd := slowDisk{opts: Options{MaxBuffer: buf, Compress: mode.compress},
					delay: 500 * time.Millisecond, batch: 100, ship: mode.ship}
				line := float64(slowLineBytes)
				var lossless, lossy float64
				var best slowResult
				b.ReportAllocs()
				searches := 0
				for b.Loop() {
					lo, hi := float64(buf)/8/line, 2*float64(buf)/line
					var kept slowResult // the run at lo, once one dropped nothing
					sd.dur = 5 * time.Second
					for range 6 {
						sd.rate = (lo + hi) / 2
						res := sd.run(b, b.TempDir())
						if res.refused == 0 {
							lo, kept = sd.rate, res
						} else {
							hi = sd.rate
						}
					}
					rate := 0.0
					for tries := 0; kept.kept != nil && tries < 5; tries++ {
						// Long enough to end a segment at the bytes a second of the last run kept whole.
						perSecond := float64(kept.bytes) / kept.elapsed.Seconds()
						sd.dur = time.Duration(min(90, max(30, 1.5*float64(4<<20)/perSecond))) * time.Second
						sd.rate = lo
						res := sd.run(b, b.TempDir())
						if res.refused == 0 {
							rate, kept = lo, res
							break
						}
						hi, lo = lo, 0.9*lo
					}
					if searches++; searches == 1 || rate < lossless {
						lossless, lossy, best = rate, hi, kept // the worst of several searches
					}
				}
				b.ReportMetric(lossless, "lossless-points/s")
				b.ReportMetric(lossy, "lossy-points/s")
				if lossless > 0 {
					b.ReportMetric(float64(best.peakUnsafe), "unsafe-bytes")
					b.ReportMetric(float64(best.peakUnwritten), "unwritten-bytes")
					b.ReportMetric(float64(best.segments-1), "rolls")
					b.ReportMetric(float64(best.maxAppend.Microseconds()), "max-append-us")
					if mode.ship {
						b.ReportMetric(100*float64(len(best.shipped))/float64(len(best.kept)-best.refused), "shipped-%")
					}
				}
			})
		}
	}
}
