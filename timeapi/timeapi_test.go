package timeapi

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// setClock is a clock the test sets.
type setClock struct{ ns *atomic.Int64 }

func newSetClock(ns int64) setClock {
	c := setClock{new(atomic.Int64)}
	c.ns.Store(ns)
	return c
}
func (c setClock) Now() (int64, error)     { return c.ns.Load(), nil }
func (c setClock) Domain() timebase.Domain { return timebase.DomainMonotonicRaw }

// openWith opens path with the given clocks in place of the kernel's.
func openWith(t testing.TB, path string, raw, rt, mono timebase.Clock) *Reader {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.raw, r.realtime, r.monotonic = raw, rt, mono
	return r
}

func create(t testing.TB, path string, clocks ...string) *Writer {
	t.Helper()
	w, err := Create(path, 0o644, clocks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// pair is a writer of "system" and "global" and a reader of its segment.
func pair(t testing.TB) (*Writer, *Reader) {
	t.Helper()
	_, w, r := pairAt(t)
	return w, r
}

func pairAt(t testing.TB) (string, *Writer, *Reader) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "time.shm")
	w := create(t, path, "system", "global")
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return path, w, r
}

func TestPublishNow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "time.shm")
	w := create(t, path, "system", "global")
	raw := newSetClock(10e9)
	r := openWith(t, path, raw, raw, raw)

	if _, err := r.Now("system"); !errors.Is(err, ErrNotInitialised) {
		t.Fatalf("before the first publish: %v, want ErrNotInitialised", err)
	}
	// 3 ms behind: the centre is the truth, not the clock.
	w.Publish(0, Model{State: Locked, BaseNS: 10e9, TrueNS: 1_700_000_000e9, RatePPB: 1000,
		BoundNS: 5000, GrowthPPB: 20_000, VoidNS: 20e9, RealtimeNS: 1_700_000_000e9 - 3e6})
	iv, err := r.Now("system")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Interval{1_700_000_000e9 - 5001, 1_700_000_000e9 + 5001, Locked}); iv != want {
		t.Fatalf("at BaseNS: %+v, want %+v", iv, want)
	}
	raw.ns.Store(12e9) // 2 s later: centre +2 s + 2 µs (1000 ppb), half +40 µs (20 ppm)
	iv, _ = r.Now("system")
	if want := (Interval{1_700_000_002e9 + 2000 - 45001, 1_700_000_002e9 + 2000 + 45001, Locked}); iv != want {
		t.Fatalf("2 s on: %+v, want %+v", iv, want)
	}
	if iv.MidNS() != 1_700_000_002e9+2000 || iv.HalfWidthNS() != 45001 {
		t.Errorf("mid %d, half-width %d", iv.MidNS(), iv.HalfWidthNS())
	}
	if ok, _ := r.After("system", 1_700_000_002e9-50_000); !ok {
		t.Error("After a time 50 µs before the earliest: false")
	}
	if ok, _ := r.After("system", 1_700_000_002e9); ok {
		t.Error("After a time inside the interval: true")
	}
	if ok, _ := r.Before("system", 1_700_000_002e9+50_000); !ok {
		t.Error("Before a time past the latest: false")
	}
	if ok, _ := r.Before("system", 1_700_000_002e9); ok {
		t.Error("Before a time inside the interval: true")
	}
	raw.ns.Store(20e9)
	if _, err := r.Now("system"); !errors.Is(err, ErrVoid) {
		t.Fatalf("at VoidNS: %v, want ErrVoid", err)
	}
	if _, err := r.Now("global"); !errors.Is(err, ErrNotInitialised) {
		t.Fatalf("global never published: %v, want ErrNotInitialised", err)
	}
	if _, err := r.Now("hca"); !errors.Is(err, ErrUnknownClock) {
		t.Fatalf("no such clock: %v, want ErrUnknownClock", err)
	}
	if _, err := r.Now("a name longer than fifteen"); !errors.Is(err, ErrUnknownClock) {
		t.Fatalf("long name: %v, want ErrUnknownClock", err)
	}
	raw.ns.Store(11e9)
	w.Void(0)
	if _, err := r.Now("system"); !errors.Is(err, ErrVoid) {
		t.Fatalf("after Void: %v, want ErrVoid", err)
	}
	names, err := r.Clocks()
	if err != nil || len(names) != 2 || names[0] != "system" || names[1] != "global" {
		t.Fatalf("Clocks: %q, %v", names, err)
	}
}

// A restarted writer takes over the file in place: an open reader sees the new
// data without reopening, and nothing of the old writer's as fresh.
func TestRestartInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "time.shm")
	w, err := Create(path, 0o644, []string{"system", "global"})
	if err != nil {
		t.Fatal(err)
	}
	raw := newSetClock(10e9)
	r := openWith(t, path, raw, raw, raw)
	w.Publish(1, Model{State: Locked, BaseNS: 10e9, TrueNS: 5e9, BoundNS: 100, VoidNS: 1 << 62})
	if _, err := r.Now("global"); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, 0o644, []string{"system"}); err == nil {
		t.Fatal("a second writer on a held path: no error")
	}
	w.Close()
	if _, err := r.Now("global"); err != nil {
		t.Fatalf("after the writer closed, before void: %v", err)
	}
	w2 := create(t, path, "global", "system") // the order may change on restart
	if _, err := r.Now("global"); !errors.Is(err, ErrNotInitialised) {
		t.Fatalf("restarted, not yet published: %v, want ErrNotInitialised", err)
	}
	w2.Publish(0, Model{State: Holdover, BaseNS: 10e9, TrueNS: 7e9, BoundNS: 100, VoidNS: 1 << 62})
	iv, err := r.Now("global")
	if err != nil || iv.State != Holdover || iv.EarliestNS != 7e9-101 {
		t.Fatalf("after the restart's publish: %+v, %v", iv, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != SegmentSize || st.Mode().Perm() != 0o644 {
		t.Fatalf("file: %v %v", st, err)
	}
}

func TestHeaderReinitialising(t *testing.T) {
	path := filepath.Join(t.TempDir(), "time.shm")
	w := create(t, path, "system")
	raw := newSetClock(10e9)
	r := openWith(t, path, raw, raw, raw)
	w.Publish(0, Model{State: Locked, BaseNS: 10e9, TrueNS: 5e9, BoundNS: 100, VoidNS: 1 << 62})
	e := &w.seg.epoch
	e.Add(1) // odd, as a Create in progress leaves it
	if _, err := r.Now("system"); !errors.Is(err, ErrNotInitialised) {
		t.Fatalf("header odd: %v, want ErrNotInitialised", err)
	}
	e.Add(1)
	seq := &w.seg.sections[0].seq
	seq.Add(1) // a writer that died mid-publish
	if _, err := r.Now("system"); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("section odd: %v, want ErrInconsistent", err)
	}
	seq.Add(1)
	w.seg.version.Store(2)
	if _, err := r.Now("system"); !errors.Is(err, ErrVersion) {
		t.Fatalf("version 2: %v, want ErrVersion", err)
	}
	w.seg.version.Store(LayoutVersion)
	w.seg.sections[0].ratePPB.Store(MaxRatePPB + 1)
	if _, err := r.Now("system"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("rate out of range: %v, want ErrMalformed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, make([]byte, 100), 0o644)
	if _, err := Open(short); !errors.Is(err, ErrNotInitialised) {
		t.Errorf("short file: %v, want ErrNotInitialised", err)
	}
	bad := filepath.Join(dir, "bad")
	b := make([]byte, SegmentSize)
	copy(b, "NOTATIME")
	b[offEpoch] = 2
	os.WriteFile(bad, b, 0o644)
	if _, err := Open(bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad magic: %v, want ErrMalformed", err)
	}
	for _, c := range [][]string{nil, {"system", "system"}, {"with space"}, {""}, {"sixteen-chars-xx"}} {
		if _, err := Create(filepath.Join(dir, "c"), 0o644, c); err == nil {
			t.Errorf("Create(%q): no error", c)
		}
	}
}

func TestStateNumbers(t *testing.T) {
	// The numbers are judge.State's and the C/Python readers'.
	for s, want := range map[State]string{0: "UNKNOWN", 1: "LOCKED", 2: "HOLDOVER", 3: "FREERUN", 9: "State(9)"} {
		if s.String() != want {
			t.Errorf("%d: %s, want %s", uint32(s), s, want)
		}
	}
}

func TestModelArithmetic(t *testing.T) {
	m := Model{State: Locked, BaseNS: 0, TrueNS: 0, RatePPB: -MaxRatePPB, BoundNS: 0, GrowthPPB: MaxGrowthPPB, VoidNS: 1 << 62}
	iv, err := m.at(maxAgeNS, 0)
	if err != nil {
		t.Fatal(err)
	}
	centre := int64(maxAgeNS) - maxAgeNS/10
	if mid := iv.EarliestNS/2 + iv.LatestNS/2; mid < centre-1 || mid > centre+1 {
		t.Errorf("centre at the farthest age: %d, want %d", mid, centre)
	}
	if half := (iv.LatestNS - iv.EarliestNS) / 2; half != maxAgeNS+1 {
		t.Errorf("half at the farthest age: %d, want %d", half, int64(maxAgeNS+1))
	}
	if _, err := m.at(maxAgeNS+1, 0); !errors.Is(err, ErrVoid) {
		t.Errorf("beyond the farthest age: %v", err)
	}
	if g := growNS(-1, 1); g != 1 {
		t.Errorf("growth rounds up: %d", g)
	}
}

func TestAllocs(t *testing.T) {
	w, r := pair(t)
	raw, _ := rawClock().Now()
	rt, _ := timebase.Realtime.Now()
	m := Model{State: Locked, BaseNS: raw, TrueNS: rt, BoundNS: 1000, GrowthPPB: 10_000, VoidNS: raw + 3600e9, RealtimeNS: rt}
	w.Publish(1, m)
	for name, f := range map[string]func(){
		"Publish": func() { w.Publish(1, m) },
		"Now": func() {
			if _, err := r.Now("global"); err != nil {
				t.Fatal(err)
			}
		},
		"Past": func() {
			if _, err := r.Past("global", Realtime, rt); err != nil {
				t.Fatal(err)
			}
		},
		"After":   func() { r.After("global", 0) },
		"Unknown": func() { r.Now("nosuch") },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// mulPPB and growNS agree with exact arithmetic on both sides of their fast
// path's limits.
func TestPPBArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e9 := big.NewInt(1e9)
	for i := 0; i < 200_000; i++ {
		d := rng.Int64N(2*maxAgeNS+1) - maxAgeNS
		if i%2 == 0 {
			d >>= rng.IntN(40) // many near the model
		}
		ppb := rng.Int64N(2*MaxGrowthPPB+1) - MaxGrowthPPB
		if i%3 == 0 {
			ppb >>= rng.IntN(30)
		}
		p := new(big.Int).Mul(big.NewInt(d), big.NewInt(ppb))
		if got, want := mulPPB(d, ppb), new(big.Int).Quo(p, e9).Int64(); got != want {
			t.Fatalf("mulPPB(%d, %d) = %d, want %d", d, ppb, got, want)
		}
		if ppb < 0 {
			ppb = -ppb
		}
		ad := d
		if ad < 0 {
			ad = -ad
		}
		q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(ad), big.NewInt(ppb)), e9, new(big.Int))
		if r.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		if got := growNS(d, ppb); got != q.Int64() {
			t.Fatalf("growNS(%d, %d) = %d, want %d", d, ppb, got, q.Int64())
		}
	}
}

// Validate and the reader's check agree: every field out of range is named.
func TestModelValidate(t *testing.T) {
	good := Model{State: Locked, BaseNS: 1, TrueNS: 2, RatePPB: 3, BoundNS: 4, GrowthPPB: 5, VoidNS: 6, RealtimeNS: 7}
	if err := good.Validate(); err != nil || !good.valid() {
		t.Fatalf("a good model: %v", err)
	}
	for name, bad := range map[string]func(*Model){
		"state":    func(m *Model) { m.State = 4 },
		"base":     func(m *Model) { m.BaseNS = -1 },
		"true":     func(m *Model) { m.TrueNS = maxTimeNS + 1 },
		"REALTIME": func(m *Model) { m.RealtimeNS = -maxTimeNS - 1 },
		"rate":     func(m *Model) { m.RatePPB = -MaxRatePPB - 1 },
		"growth":   func(m *Model) { m.GrowthPPB = -1 },
		"bound":    func(m *Model) { m.BoundNS = MaxBoundNS + 1 },
	} {
		m := good
		bad(&m)
		err := m.Validate()
		if !errors.Is(err, ErrMalformed) || m.valid() {
			t.Errorf("%s: Validate %v, valid %v", name, err, m.valid())
		}
	}
}
