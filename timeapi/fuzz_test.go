package timeapi

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// FuzzSegment reads arbitrary bytes as a segment: Open and every read must
// fail with an error or answer an ordered interval, never panic or hang.
func FuzzSegment(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.shm")
	w := create(f, path, "system", "global")
	w.Publish(0, Model{State: Locked, BaseNS: 10e9, TrueNS: 1_700_000_000e9, RatePPB: 900, BoundNS: 30_000,
		GrowthPPB: 20_000, VoidNS: 15e9, RealtimeNS: 1_700_000_000e9 - 3e6})
	w.Publish(1, Model{State: Holdover, BaseNS: 9e9, TrueNS: 4e9, BoundNS: 1e6, GrowthPPB: MaxGrowthPPB, VoidNS: 1 << 62, RealtimeNS: 1})
	w.Publish(1, Model{State: Holdover, BaseNS: 10e9, TrueNS: 5e9, BoundNS: 1e6, GrowthPPB: MaxGrowthPPB, VoidNS: 1 << 62, RealtimeNS: 1e9})
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	w.Publish(0, Model{State: Freerun, BaseNS: maxTimeNS, TrueNS: -maxTimeNS, RatePPB: -MaxRatePPB, BoundNS: MaxBoundNS,
		GrowthPPB: MaxGrowthPPB, VoidNS: 1<<63 - 1, RealtimeNS: -1 << 63})
	extreme, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(extreme)
	f.Add(seed[:HeaderSize])
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		// From a file: the size checks.
		p := filepath.Join(dir, "fuzz.shm")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if r, err := Open(p); err == nil {
			r.Close()
		}
		// From memory, 8-aligned like a mapping: every read.
		words := make([]uint64, SegmentSize/8)
		mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), SegmentSize)
		copy(mem, b)
		raw := newSetClock(11e9)
		r := newReader("fuzz", newSegment(mem), func() error { return nil }, raw, raw, raw)
		r.Clocks()
		for _, c := range []string{"system", "global", ""} {
			for _, read := range []func() (Interval, error){
				func() (Interval, error) { return r.Now(c) },
				func() (Interval, error) { return r.Past(c, Realtime, 10e9) },
				func() (Interval, error) { return r.Past(c, MonotonicRaw, -1<<62) },
			} {
				if iv, err := read(); err == nil && iv.EarliestNS > iv.LatestNS {
					t.Fatalf("%s: earliest %d after latest %d", c, iv.EarliestNS, iv.LatestNS)
				}
			}
		}
	})
}
