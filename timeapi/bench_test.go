package timeapi

import (
	"path/filepath"
	"testing"
	"time"
)

// benchReader is a reader of a segment whose "system" section is LOCKED and
// valid for an hour.
func benchReader(b *testing.B) *Reader {
	w, r := pair(b)
	raw, _ := r.raw.Now()
	rt := time.Now().UnixNano()
	w.Publish(0, Model{State: Locked, BaseNS: raw, TrueNS: rt + 3e6, RatePPB: 1200, BoundNS: 20_000,
		GrowthPPB: 15_000, VoidNS: raw + 3600e9, RealtimeNS: rt})
	return r
}

// BenchmarkNow is one read of true time; BenchmarkClockGettimeRealtime beside
// it is one clock_gettime(CLOCK_REALTIME) by the same route Now reads
// CLOCK_MONOTONIC_RAW (the vDSO on amd64, the system call elsewhere).
func BenchmarkNow(b *testing.B) {
	r := benchReader(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Now("system"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClockGettimeRealtime(b *testing.B) {
	c := realtimeClock()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Now(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClockGettimeMonotonicRaw is Now's own clock read, alone.
func BenchmarkClockGettimeMonotonicRaw(b *testing.B) {
	c := rawClock()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Now(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimeNow is Go's time.Now (the runtime's vDSO reads of REALTIME and
// MONOTONIC), for reference.
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = time.Now()
	}
}

func BenchmarkPastRealtime(b *testing.B) {
	r := benchReader(b)
	stamp := time.Now().UnixNano()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Past("system", Realtime, stamp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPublish(b *testing.B) {
	w := create(b, filepath.Join(b.TempDir(), "time.shm"), "system")
	m := Model{State: Locked, BaseNS: 1, TrueNS: 2, BoundNS: 3, VoidNS: 4, RealtimeNS: 5}
	b.ReportAllocs()
	for b.Loop() {
		m.BaseNS++
		w.Publish(0, m)
	}
}
