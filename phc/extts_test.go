package phc

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// goldenExtts reads testdata/extts_events.hex: three struct ptp_extts_event
// records laid out by hand from the uapi header (little-endian).
func goldenExtts(tb testing.TB) []byte {
	tb.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		tb.Skip("the golden extts vectors are little-endian; this machine is not")
	}
	raw, err := os.ReadFile("testdata/extts_events.hex")
	if err != nil {
		tb.Fatal(err)
	}
	var h strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		h.WriteString(strings.ReplaceAll(line, " ", ""))
	}
	b, err := hex.DecodeString(h.String())
	if err != nil || len(b) != 3*ExttsEventSize {
		tb.Fatalf("golden extts vectors: %d bytes, %v", len(b), err)
	}
	return b
}

// goldenExttsEvents are the events of goldenExtts, decoded by hand.
func goldenExttsEvents(d timebase.Domain) []ExttsEvent {
	return []ExttsEvent{
		{PHCNS: 1_700_000_000_123_456_789, Domain: d, Channel: 0, Flags: 0},
		{PHCNS: 1_700_000_000_999_999_999, Domain: d, Channel: 1, Flags: 0x3},
		{PHCNS: 1_700_000_001_000_000_000, Domain: d, Channel: 0, Flags: 0x5},
	}
}

func TestDecodeExttsGolden(t *testing.T) {
	b := goldenExtts(t)
	dst := make([]ExttsEvent, 8)
	n, err := DecodeExttsEvents(dst, b, timebase.PHC(2))
	if err != nil || n != 3 {
		t.Fatalf("decoded %d, %v", n, err)
	}
	for i, want := range goldenExttsEvents(timebase.PHC(2)) {
		if dst[i] != want {
			t.Errorf("event %d: %+v, want %+v", i, dst[i], want)
		}
	}
	if e := []Edge{dst[0].Edge(), dst[1].Edge(), dst[2].Edge()}; e[0] != 0 || e[1] != EdgeRising || e[2] != EdgeFalling {
		t.Errorf("edges %v", e)
	}
	// A caller buffer shorter than the read: only what fits, no error.
	if n, err := DecodeExttsEvents(dst[:2], b, timebase.PHC(2)); n != 2 || err != nil {
		t.Errorf("into 2 slots: %d, %v", n, err)
	}
}

func TestAppendExttsEventIsTheKernelLayout(t *testing.T) {
	g := goldenExtts(t)
	var b []byte
	for _, e := range goldenExttsEvents(timebase.PHC(0)) {
		b = AppendExttsEvent(b, e.Channel, e.PHCNS, e.Flags)
	}
	if !bytes.Equal(b, g) {
		t.Fatalf("encoded\n%x\nwant\n%x", b, g)
	}
	// Before the epoch: nsec stays in [0, 1e9).
	b = AppendExttsEvent(nil, 0, -1, 0)
	var e [1]ExttsEvent
	if n, err := DecodeExttsEvents(e[:], b, 0); n != 1 || err != nil || e[0].PHCNS != -1 {
		t.Fatalf("-1 ns round trip: %+v %v", e[0], err)
	}
}

func TestDecodeExttsBadInput(t *testing.T) {
	g := goldenExtts(t)
	badNsec := append([]byte(nil), g...)
	binary.NativeEndian.PutUint32(badNsec[ExttsEventSize+8:], 1_000_000_000)
	badSec := append([]byte(nil), g...)
	binary.NativeEndian.PutUint64(badSec[2*ExttsEventSize:], 1<<62)
	for _, c := range []struct {
		name string
		b    []byte
		n    int
		is   error
		msg  string
	}{
		{"short read in the first event", g[:20], 0, ErrPartialEvent, "20 trailing bytes of 32"},
		{"short read after one event", g[:40], 1, ErrPartialEvent, "8 trailing bytes of 32"},
		{"nsec of a second", badNsec, 1, nil, "extts event 1: nsec 1000000000 out of range"},
		{"seconds beyond int64 ns", badSec, 2, nil, "extts event 2: 4611686018427387904 s"},
		{"empty", nil, 0, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := make([]ExttsEvent, 4)
			n, err := DecodeExttsEvents(dst, c.b, 0)
			if n != c.n {
				t.Errorf("decoded %d, want %d", n, c.n)
			}
			if c.msg == "" {
				if err != nil {
					t.Errorf("error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Errorf("error %v, want %q", err, c.msg)
			}
		})
	}
}

func TestDecodeExttsDoesNotAllocate(t *testing.T) {
	g := goldenExtts(t)
	dst := make([]ExttsEvent, 3)
	if a := testing.AllocsPerRun(200, func() {
		if n, err := DecodeExttsEvents(dst, g, timebase.PHC(0)); n != 3 || err != nil {
			t.Fatal(n, err)
		}
	}); a != 0 {
		t.Fatalf("DecodeExttsEvents allocates %v times", a)
	}
}

func TestValidateExtts(t *testing.T) {
	caps := Caps{ExtTS: 2, Pins: 4}
	for _, c := range []struct {
		name  string
		caps  Caps
		chans []ExttsChannel
		is    error
		msg   string
	}{
		{"no extts channels", Caps{Pins: 4}, []ExttsChannel{{Channel: 0, Pin: 1}}, errors.ErrUnsupported,
			"phc /dev/ptp1 extts channel 0 pin 1: the clock has no external timestamp channels (n_ext_ts 0)"},
		{"channel beyond the clock's", caps, []ExttsChannel{{Channel: 2, Pin: NoPin}}, ErrOutOfRange,
			"phc /dev/ptp1 extts channel 2: channel out of range: the clock has 2 (0..1)"},
		{"negative channel", caps, []ExttsChannel{{Channel: -1, Pin: NoPin}}, ErrOutOfRange, "extts channel -1: channel out of range"},
		{"pin beyond the clock's", caps, []ExttsChannel{{Channel: 1, Pin: 4}}, ErrOutOfRange,
			"phc /dev/ptp1 extts channel 1 pin 4: pin out of range: the clock has 4 (0..3)"},
		{"pin on a clock without pins", Caps{ExtTS: 2}, []ExttsChannel{{Channel: 1, Pin: 0}}, ErrOutOfRange,
			"extts channel 1 pin 0: the clock has no programmable pins"},
		{"unknown edge bits", caps, []ExttsChannel{{Channel: 0, Pin: NoPin, Edges: 1}}, ErrOutOfRange, "edges 0x1: want rising, falling or both"},
		{"negative period", caps, []ExttsChannel{{Channel: 0, Pin: NoPin, PeriodNS: -1}}, ErrOutOfRange, "negative period"},
		{"channel twice", caps, []ExttsChannel{{Channel: 0, Pin: NoPin}, {Channel: 0, Pin: 1}}, nil, "extts channel 0 pin 1: channel requested twice"},
		{"pin twice", caps, []ExttsChannel{{Channel: 0, Pin: 1}, {Channel: 1, Pin: 1}}, nil, "extts channel 1 pin 1: pin also requested for channel 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := validateExtts("/dev/ptp1", c.caps, c.chans)
			var xe *ExttsError
			if err == nil || err.Error() != c.msg && !strings.Contains(err.Error(), c.msg) || !errors.As(err, &xe) {
				t.Fatalf("got %v, want %q", err, c.msg)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("%v is not %v", err, c.is)
			}
		})
	}
	ok := []ExttsChannel{{Channel: 0, Pin: 3, Edges: EdgeBoth}, {Channel: 1, Pin: NoPin}}
	if err := validateExtts("/dev/ptp1", caps, ok); err != nil || ok[1].Edges != EdgeRising {
		t.Fatalf("valid request: %v, edges %v", err, ok[1].Edges)
	}
}

func TestLossTrackerCountsWhatCanBeCounted(t *testing.T) {
	lt := newLossTracker(3, []ExttsChannel{{Channel: 0, PeriodNS: 1e9}, {Channel: 1}})
	var c exttsCounters
	lt.observe([]ExttsEvent{
		{Channel: 0, PHCNS: 10e9},
		{Channel: 1, PHCNS: 10e9},
		{Channel: 0, PHCNS: 11e9 + 3e6},   // on time, with jitter
		{Channel: 0, PHCNS: 14e9 - 2e6},   // 3 periods later: 2 edges missed
		{Channel: 1, PHCNS: 100e9},        // no period: no inference
		{Channel: 2, PHCNS: 5e9},          // not ours
		{Channel: 7, PHCNS: 5e9},          // beyond the clock's channels
		{Channel: 0, PHCNS: 13e9},         // backwards (a step)
		{Channel: 0, PHCNS: 14e9 + 400e6}, // 1.4 periods: jitter, not a loss
	}, &c)
	s := c.stats()
	if s.MissedEdges != 2 || s.Backwards != 1 || s.OtherChannels != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestEdgeString(t *testing.T) {
	for e, want := range map[Edge]string{0: "unknown", EdgeRising: "rising", EdgeFalling: "falling", EdgeBoth: "both", 8: "edge(8)"} {
		if e.String() != want {
			t.Errorf("%d: %q", e, e.String())
		}
	}
}

// BenchmarkDecodeExtts64 decodes one batch of 64 events (one read's worth when
// the reader's buffer is full).
func BenchmarkDecodeExtts64(b *testing.B) {
	var raw []byte
	for i := 0; i < 64; i++ {
		raw = AppendExttsEvent(raw, uint32(i%2), 1_700_000_000_000_000_000+int64(i)*500_000_000, 0)
	}
	dst := make([]ExttsEvent, 64)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if n, err := DecodeExttsEvents(dst, raw, timebase.PHC(0)); n != 64 || err != nil {
			b.Fatal(n, err)
		}
	}
}
