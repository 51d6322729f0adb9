package judging

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/timeapi"
	"github.com/monagent/monagent/timebase"
)

// fakeSegment keeps what a Publisher publishes.
type fakeSegment struct {
	mu     sync.Mutex
	models [2][]timeapi.Model
	voided [2]int
	closed bool
}

func (f *fakeSegment) Publish(i int, m timeapi.Model) {
	f.mu.Lock()
	f.models[i] = append(f.models[i], m)
	f.mu.Unlock()
}
func (f *fakeSegment) Void(i int)   { f.voided[i]++ }
func (f *fakeSegment) Close() error { f.closed = true; return nil }

func (f *fakeSegment) last(i int) timeapi.Model {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.models[i][len(f.models[i])-1]
}

// pubOnXbed publishes x's votes to a fake segment; the base clock is the
// virtual steady clock (read with a 100 ns window).
func pubOnXbed(x *xbed) *fakeSegment {
	f := &fakeSegment{}
	x.g.pub = &Publisher{w: f, system: 0, global: -1, maxAgeNS: 10e9, read: func() (timebase.Offset, error) {
		return timebase.Offset{MidNS: x.v.mono, OffsetNS: x.v.off, WindowNS: 100}, nil
	}}
	return f
}

// at evaluates m at base time b as the readers do (docs/timeapi.md).
func at(m timeapi.Model, b int64) (lo, hi int64, void bool) {
	if b >= m.VoidNS {
		return 0, 0, true
	}
	d := b - m.BaseNS
	c := m.TrueNS + d + mulPPB(d, m.RatePPB)
	u := m.BoundNS + growNS(d, m.GrowthPPB) + 1
	return c - u, c + u, false
}

// The system clock 3 ms behind its three agreeing references: the
// published interval is centred on REALTIME + 3 ms, its half-width the
// vote's plus the sample's age at the growth rate, never ±(3 ms + u)
// around REALTIME; it grows while no update comes and is void after
// max_age.
func TestTimeAPICentredOnTruth(t *testing.T) {
	x := newXbed(t, 3)
	f := pubOnXbed(x)
	for i := range x.off {
		x.off[i] = -3e6 // clock − reference: the clock is 3 ms behind
	}
	votes := 0
	for range 5 {
		votes += len(x.second())
	}
	if n := len(f.models[0]); n < votes {
		t.Fatalf("%d publishes for %d votes: want one per vote", n, votes)
	}
	m := f.last(0)
	c := x.g.crossChecks()[0]
	d := c.combined(map[[2]string]*bool{})
	if m.State != timeapi.Locked || d.State != "LOCKED" {
		t.Fatalf("published %v, vote %s: want LOCKED", m.State, d.State)
	}
	rt := x.v.mono + x.v.off
	if got := m.TrueNS - rt; got < 3e6-xboundU || got > 3e6+xboundU {
		t.Errorf("centre − REALTIME = %d ns, want +3 ms (within u = %d ns)", got, xboundU)
	}
	if m.BoundNS < d.HalfWidthNS || m.BoundNS > d.HalfWidthNS+growNS(1e9, m.GrowthPPB)+100 {
		t.Errorf("half-width %d ns, the vote's %d ns: want the vote's plus at most a second's growth (%d ppb)", m.BoundNS, d.HalfWidthNS, m.GrowthPPB)
	}
	lo, hi, _ := at(m, m.BaseNS)
	if lo <= rt && rt <= hi {
		t.Errorf("[%d, %d] holds REALTIME %d: centred on the clock, not the truth", lo, hi, rt)
	}
	if lo > rt+3e6 || hi < rt+3e6 {
		t.Errorf("[%d, %d] misses the truth REALTIME + 3 ms", lo, hi)
	}
	lo2, hi2, void := at(m, m.BaseNS+5e9)
	if void || hi2-lo2 <= hi-lo {
		t.Errorf("5 s later: [%d, %d] void %v: want a wider interval", lo2, hi2, void)
	}
	if _, _, void := at(m, m.BaseNS+10e9); !void {
		t.Errorf("not void at max_age (void at %d, base %d)", m.VoidNS, m.BaseNS)
	}
	x.g.pub.Close(x.g.log)
	if f.voided[0] != 1 || !f.closed {
		t.Errorf("close: voided %d times, closed %v: want the section void and the segment closed", f.voided[0], f.closed)
	}
	n := len(f.models[0])
	x.second()
	if len(f.models[0]) != n {
		t.Errorf("published after close")
	}
}

// A vote that turns disputed is published at once, void: no reader gets
// the LOCKED interval a reference in the vote has just contradicted.
func TestTimeAPIDisputedVoidAtOnce(t *testing.T) {
	x := newXbed(t, 2)
	f := pubOnXbed(x)
	for range 4 {
		x.second()
	}
	if m := f.last(0); m.State != timeapi.Locked || m.VoidNS <= m.BaseNS {
		t.Fatalf("two agreeing references: published %+v, want LOCKED and readable", m)
	}
	x.off[1] = 5e6 // reference 1 now says the clock is 5 ms ahead
	start := x.v.mono
	x.v.mono = start + 10e6
	x.refs[0].Observe(x.b, judge.Sample{TimeNS: x.v.mono + x.v.off, Synced: true, OffsetNS: 0, BoundNS: xboundU, FreqErrPPB: -1})
	x.v.mono = start + 20e6
	x.refs[1].Observe(x.b, judge.Sample{TimeNS: x.v.mono + x.v.off, Synced: true, OffsetNS: 5e6, BoundNS: 5e6 + xboundU, FreqErrPPB: -1})
	m := f.last(0)
	if m.State == timeapi.Locked || m.VoidNS > m.BaseNS {
		t.Fatalf("after the contradicting sample: published %v void at %d (base %d): want not LOCKED and void at once", m.State, m.VoidNS, m.BaseNS)
	}
}

// No voting reference (all quiet past holdover): void, not the last interval.
func TestTimeAPINoneVoid(t *testing.T) {
	x := newXbed(t, 3)
	f := pubOnXbed(x)
	for range 3 {
		x.second()
	}
	for i := range x.quiet {
		x.quiet[i] = true
	}
	for range 16 { // stale after 3 s, holdover 10 s
		x.second()
	}
	if m := f.last(0); m.VoidNS > m.BaseNS || m.State == timeapi.Locked {
		t.Fatalf("no reference votes: published %+v, want void and not LOCKED", m)
	}
}

// The rate of REALTIME against MONOTONIC_RAW: measured over the baseline,
// its error from the read windows; a step starts the baseline again.
func TestRealtimeRate(t *testing.T) {
	var e rtRate
	off := int64(1_700_000_000e9)
	rate, errPPB := e.note(timebase.Offset{MidNS: 1e9, OffsetNS: off, WindowNS: 100})
	if rate != 0 || errPPB != maxRateErrPPB {
		t.Fatalf("first pair: %d ± %d ppb, want 0 ± %d", rate, errPPB, maxRateErrPPB)
	}
	// REALTIME 20 ppm fast.
	for s := int64(2); s <= 40; s++ {
		rate, errPPB = e.note(timebase.Offset{MidNS: s * 1e9, OffsetNS: off + (s-1)*20_000, WindowNS: 100})
	}
	if rate < 20_000-errPPB || rate > 20_000+errPPB || errPPB > 10 {
		t.Errorf("20 ppm: %d ± %d ppb", rate, errPPB)
	}
	rate, errPPB = e.note(timebase.Offset{MidNS: 41e9, OffsetNS: off + 40*20_000 + 5e6, WindowNS: 100}) // REALTIME stepped 5 ms
	if errPPB != maxRateErrPPB {
		t.Errorf("after a 5 ms step: %d ± %d ppb, want the baseline started again", rate, errPPB)
	}
}

// The publisher makes the segment, publishes it, voids it at a clean
// stop; a second publisher on the same path gets an error.
func TestTimeAPISegmentFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "time.shm")
	p, err := OpenPublisher(path, 0o644, 10*time.Second, nil, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("segment %s: %v %v, want mode 0644", path, st, err)
	}
	if _, err := OpenPublisher(path, 0o644, 10*time.Second, nil, false, false, nil); err == nil {
		t.Error("second publisher on one segment: no error")
	}
	r, err := timeapi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Now("system"); !errors.Is(err, timeapi.ErrNotInitialised) {
		t.Errorf("before a vote: %v, want not initialised", err)
	}
	x := newXbed(t, 3)
	o, _ := readRawRealtime() // the virtual clocks from the real ones: the reader reads MONOTONIC_RAW
	x.v.mono, x.v.off = o.MidNS, o.OffsetNS
	p.read = func() (timebase.Offset, error) {
		return timebase.Offset{MidNS: x.v.mono, OffsetNS: x.v.off, WindowNS: 100}, nil
	}
	x.g.pub = p
	for range 3 {
		x.second()
	}
	iv, err := r.Now("system")
	if err != nil || iv.State != timeapi.Locked {
		t.Fatalf("after votes: %+v %v, want LOCKED", iv, err)
	}
	p.Close(x.g.log)
	if _, err := r.Now("system"); !errors.Is(err, timeapi.ErrVoid) {
		t.Errorf("after close: %v, want void", err)
	}
}

// Publishing adds nothing to the vote's allocations.
func TestTimeAPIPublishNoAlloc(t *testing.T) {
	x := newXbed(t, 3)
	pubOnXbed(x)
	for range 3 {
		x.second()
	}
	x.g.pub.w = discardSegment{}
	m := x.refs[0]
	if n := testing.AllocsPerRun(100, func() {
		x.v.mono += 1e6
		m.Observe(x.b, judge.Sample{TimeNS: x.v.mono + x.v.off, Synced: true, OffsetNS: 0, BoundNS: xboundU, FreqErrPPB: -1})
		x.b.Records = x.b.Records[:0]
	}); n > 0 {
		t.Errorf("%v allocations per sample with the time API", n)
	}
}

type discardSegment struct{}

func (discardSegment) Publish(int, timeapi.Model) {}
func (discardSegment) Void(int)                   {}
func (discardSegment) Close() error               { return nil }

// A model out of the readers' ranges is published void, not as a section
// every reader would refuse as malformed.
func TestTimeAPIOutOfRangeVoid(t *testing.T) {
	x := newXbed(t, 3)
	f := pubOnXbed(x)
	p := x.g.pub
	m, ok := p.begin(0, judge.Locked)
	if !ok {
		t.Fatal("begin")
	}
	m.BoundNS, m.VoidNS = 1<<60, m.BaseNS+1e9
	p.end(0, &m)
	if got := f.last(0); got.VoidNS != got.BaseNS || got.Validate() != nil {
		t.Errorf("published %+v, want a valid model, void at once", got)
	}
}
