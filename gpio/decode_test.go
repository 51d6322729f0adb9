package gpio

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// Golden vectors, little-endian, laid out field by field after
// include/uapi/linux/gpio.h (the byte order of arm, arm64 and amd64).
var (
	// A rising edge on line 17 at 1234567890123 ns, seqno 3, line_seqno 3.
	goldenRising = unhex(
		"cb04fb711f010000",       // timestamp_ns
		"01000000",               // id: GPIO_V2_LINE_EVENT_RISING_EDGE
		"11000000",               // offset 17
		"03000000",               // seqno
		"03000000",               // line_seqno
		strings.Repeat("00", 24), // padding[6]
	)
	// The falling edge 100 µs later, seqno 4, line_seqno 4.
	goldenFalling = unhex(
		"6b8bfc711f010000", "02000000", "11000000", "04000000", "04000000",
		strings.Repeat("00", 24),
	)
	// Line 3 "DATA_READY" requested by gpiomon (used, input, both edges,
	// debounce 500 µs) at MONOTONIC 987654321000 ns.
	goldenRequested = unhex(
		"444154415f5245414459"+strings.Repeat("00", 22), // name[32]
		"6770696f6d6f6e"+strings.Repeat("00", 25),       // consumer[32]
		"03000000",                 // offset
		"01000000",                 // num_attrs
		"3500000000000000",         // flags: used|input|edge_rising|edge_falling
		"03000000"+"00000000",      // attrs[0].id DEBOUNCE, padding
		"f401000000000000",         // attrs[0].debounce_period_us 500
		strings.Repeat("00", 9*16), // attrs[1..9]
		strings.Repeat("00", 16),   // padding[4]
		"68f3c8f4e5000000",         // timestamp_ns
		"01000000",                 // event_type: REQUESTED
		strings.Repeat("00", 20),   // padding[5]
	)
)

func unhex(parts ...string) []byte {
	b, err := hex.DecodeString(strings.Join(parts, ""))
	if err != nil {
		panic(err)
	}
	return b
}

func littleEndian(t testing.TB) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("golden vectors are little-endian; this machine is big-endian")
	}
}

func TestDecodeEventsGolden(t *testing.T) {
	littleEndian(t)
	buf := append(append([]byte(nil), goldenRising...), goldenFalling...)
	var evs [4]Event
	n, err := DecodeEvents(evs[:], buf, ClockRealtime)
	if err != nil || n != 2 {
		t.Fatalf("DecodeEvents = %d, %v; want 2 events", n, err)
	}
	want := [2]Event{
		{TimestampNS: 1234567890123, Offset: 17, Seqno: 3, LineSeqno: 3, Edge: EdgeRising, Clock: ClockRealtime},
		{TimestampNS: 1234567990123, Offset: 17, Seqno: 4, LineSeqno: 4, Edge: EdgeFalling, Clock: ClockRealtime},
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, evs[i], want[i])
		}
	}
	if d := evs[0].Domain(); d.String() != "realtime" {
		t.Errorf("domain %v, want realtime", d)
	}
	for _, e := range want {
		if got := AppendEvent(nil, e); string(got) != string(map[Edge][]byte{EdgeRising: goldenRising, EdgeFalling: goldenFalling}[e.Edge]) {
			t.Errorf("AppendEvent(%+v) = %x", e, got)
		}
	}
}

func TestDecodeEventsErrors(t *testing.T) {
	littleEndian(t)
	two := append(append([]byte(nil), goldenRising...), goldenFalling...)
	bad := append([]byte(nil), goldenFalling...)
	binary.LittleEndian.PutUint32(bad[evID:], 7)
	for _, c := range []struct {
		name   string
		buf    []byte
		dst    int
		n      int
		is     error
		errHas string
	}{
		{"empty", nil, 4, 0, nil, ""},
		{"partial tail", append(append([]byte(nil), goldenRising...), goldenFalling[:30]...), 4, 1, ErrPartialEvent, "30 bytes after 1 events"},
		{"only a partial", goldenRising[:47], 4, 0, ErrPartialEvent, "47 bytes"},
		{"unknown edge id", append(append([]byte(nil), goldenRising...), bad...), 4, 1, ErrBadEvent, "event 1 of 2: unknown edge id 7"},
		{"dst shorter than buf", two, 1, 1, nil, ""},
		{"no dst", two, 0, 0, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := DecodeEvents(make([]Event, c.dst), c.buf, ClockMonotonic)
			if n != c.n || !errors.Is(err, c.is) || (c.is == nil) != (err == nil) {
				t.Fatalf("DecodeEvents = %d, %v; want %d, %v", n, err, c.n, c.is)
			}
			if err != nil && !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("error %q does not say %q", err, c.errHas)
			}
		})
	}
}

func TestDecodeEventsAllocs(t *testing.T) {
	var buf []byte
	for i := range 64 {
		buf = AppendEvent(buf, Event{TimestampNS: int64(i) * 1000, Offset: 5, Seqno: uint32(i + 1), LineSeqno: uint32(i + 1), Edge: EdgeRising})
	}
	evs := make([]Event, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := DecodeEvents(evs, buf, ClockMonotonic); n != 64 || err != nil {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("DecodeEvents allocates %v times per batch, want 0", allocs)
	}
}

func TestDecodeInfoChangedGolden(t *testing.T) {
	littleEndian(t)
	c, err := DecodeInfoChanged(goldenRequested)
	if err != nil {
		t.Fatal(err)
	}
	want := InfoChange{
		Info: LineInfo{Offset: 3, Name: "DATA_READY", Consumer: "gpiomon",
			Flags: FlagUsed | FlagInput | FlagEdgeRising | FlagEdgeFalling, Debounce: 500 * time.Microsecond},
		TimestampNS: 987654321000,
		Kind:        ChangeRequested,
	}
	if c != want {
		t.Errorf("DecodeInfoChanged = %+v\nwant %+v", c, want)
	}
	if s := c.Info.Flags.String(); s != "used|input|edge_rising|edge_falling" {
		t.Errorf("flags %q", s)
	}
	if !c.Info.Used() || c.Kind.String() != "requested" {
		t.Errorf("Used %v, kind %v", c.Info.Used(), c.Kind)
	}
}

func TestDecodeInfoChangedErrors(t *testing.T) {
	littleEndian(t)
	mod := func(off int, v uint32) []byte {
		b := append([]byte(nil), goldenRequested...)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	for _, c := range []struct {
		name   string
		b      []byte
		is     error
		errHas string
	}{
		{"short", goldenRequested[:287], ErrPartialEvent, "287 bytes, want 288"},
		{"long", append(append([]byte(nil), goldenRequested...), 0), ErrPartialEvent, "289 bytes"},
		{"unknown change type", mod(icType, 9), ErrBadEvent, "line 3: unknown change type 9"},
		{"too many attributes", mod(liNumAttrs, 11), ErrBadEvent, "11 attributes"},
		{"unknown attribute id", mod(liAttrs, 42), ErrBadEvent, "unknown id 42"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeInfoChanged(c.b)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("DecodeInfoChanged: %v; want %v saying %q", err, c.is, c.errHas)
			}
		})
	}
}

func FuzzDecodeEvents(f *testing.F) {
	f.Add(goldenRising)
	f.Add(append(append([]byte(nil), goldenRising...), goldenFalling...))
	f.Add(goldenFalling[:20])
	f.Fuzz(func(t *testing.T, buf []byte) {
		var evs [8]Event
		n, err := DecodeEvents(evs[:], buf, ClockMonotonic)
		if n < 0 || n > len(evs) || n*EventSize > len(buf) {
			t.Fatalf("n = %d for %d bytes", n, len(buf))
		}
		if err == nil && n < len(evs) && n*EventSize != len(buf) {
			t.Fatalf("%d bytes decoded as %d events without an error", len(buf), n)
		}
		// What decodes encodes back to the same bytes (padding aside).
		for i := 0; i < n; i++ {
			got := AppendEvent(nil, evs[i])
			if string(got[:24]) != string(buf[i*EventSize:i*EventSize+24]) {
				t.Fatalf("event %d: %x re-encodes as %x", i, buf[i*EventSize:(i+1)*EventSize], got)
			}
		}
	})
}

func FuzzDecodeInfoChanged(f *testing.F) {
	f.Add(goldenRequested)
	f.Add(goldenRequested[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeInfoChanged(b)
		if err != nil {
			return
		}
		if len(b) != InfoChangedSize || c.Kind < ChangeRequested || c.Kind > ChangeConfig {
			t.Fatalf("accepted %d bytes as %+v", len(b), c)
		}
		if len(c.Info.Name) > maxNameSize || len(c.Info.Consumer) > maxNameSize || c.Info.Debounce < 0 {
			t.Fatalf("decoded %+v", c.Info)
		}
	})
}
