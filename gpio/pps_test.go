package gpio

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// goldenPPSKInfo is a struct pps_kinfo as the kernel lays it out on amd64,
// arm64 and 32-bit ARM (little-endian), written from linux/pps.h field by
// field: assert_sequence 1234, clear_sequence 1233, assert_tu 1795428902 s
// 123456789 ns, clear_tu 1795428901 s 623456789 ns, current_mode 0x1033
// (capture and offset of both edges, timespec format), 4 bytes of tail
// padding.
const goldenPPSKInfo = "d2040000" + "d1040000" +
	"2612046b00000000" + "15cd5b07" + "00000000" +
	"2512046b00000000" + "15322925" + "00000000" +
	"33100000" + "00000000"

func TestDecodePPSKInfoGolden(t *testing.T) {
	littleEndian(t)
	b, _ := hex.DecodeString(goldenPPSKInfo)
	if len(b) != PPSKInfoSize {
		t.Fatalf("golden vector has %d bytes, want %d", len(b), PPSKInfoSize)
	}
	e, err := DecodePPSKInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	want := PPSEvent{AssertNS: 1795428902123456789, ClearNS: 1795428901623456789, AssertSeq: 1234, ClearSeq: 1233,
		Mode: PPSCaptureAssert | PPSCaptureClear | PPSOffsetAssert | PPSOffsetClear | PPSTSFmtTSpec}
	if e != want {
		t.Fatalf("decoded %+v, want %+v", e, want)
	}
	if e.Domain() != timebase.DomainRealtime {
		t.Errorf("PPS stamps in %v, want realtime", e.Domain())
	}
	if got := AppendPPSKInfo(nil, e); hex.EncodeToString(got) != goldenPPSKInfo {
		t.Errorf("AppendPPSKInfo = %x, want %s", got, goldenPPSKInfo)
	}
	if s := e.Mode.String(); s != "capture_assert|capture_clear|offset_assert|offset_clear|tsfmt_tspec" {
		t.Errorf("mode string %q", s)
	}
	if s := (PPSCanWait | 0x10000).String(); s != "can_wait|0x10000" {
		t.Errorf("unknown bit string %q", s)
	}
}

func TestDecodePPSKInfoBad(t *testing.T) {
	littleEndian(t)
	good, _ := hex.DecodeString(goldenPPSKInfo)
	for _, tc := range []struct {
		name string
		mut  func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:PPSKInfoSize-1] }},
		{"assert nsec 1e9", func(b []byte) []byte { binary.NativeEndian.PutUint32(b[kiAssertTU+ktNsec:], 1e9); return b }},
		{"clear nsec negative", func(b []byte) []byte { binary.NativeEndian.PutUint32(b[kiClearTU+ktNsec:], 1<<31); return b }},
		{"assert sec negative", func(b []byte) []byte { binary.NativeEndian.PutUint64(b[kiAssertTU+ktSec:], 1<<63); return b }},
		{"clear sec overflows ns", func(b []byte) []byte {
			binary.NativeEndian.PutUint64(b[kiClearTU+ktSec:], uint64(maxKtimeSec))
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mut(append([]byte(nil), good...))
			if _, err := DecodePPSKInfo(b); !errors.Is(err, ErrBadEvent) {
				t.Fatalf("err = %v, want ErrBadEvent", err)
			}
		})
	}
}

func TestDecodePPSKInfoAllocs(t *testing.T) {
	b := AppendPPSKInfo(nil, PPSEvent{AssertNS: 5e9, AssertSeq: 5})
	var sink PPSEvent
	if n := testing.AllocsPerRun(100, func() { sink, _ = DecodePPSKInfo(b) }); n != 0 {
		t.Errorf("DecodePPSKInfo allocates %v times", n)
	}
	_ = sink
}

func TestPPSTracker(t *testing.T) {
	var tr PPSTracker
	steps := []struct {
		a, c       uint32
		newA, newC bool
		la, lc     uint64
	}{
		{100, 50, false, false, 0, 0}, // baseline: earlier edges are not ours
		{101, 50, true, false, 0, 0},
		{101, 51, false, true, 0, 0},
		{104, 53, true, true, 2, 1}, // missed 102, 103 and 52
		{104, 53, false, false, 0, 0},
		{0, 0, false, false, 0, 0}, // re-registered device: backwards
		{1, 1, true, true, 0, 0},
		{1<<32 - 1, 1, false, false, 0, 0}, // 2^32-2 ahead is behind: an anomaly
		{0, 1, true, false, 0, 0},          // the number wraps
	}
	for i, s := range steps {
		e := PPSEvent{AssertNS: int64(i), ClearNS: -int64(i), AssertSeq: s.a, ClearSeq: s.c}
		tr.Observe(&e)
		if e.NewAssert != s.newA || e.NewClear != s.newC || e.LostAssert != s.la || e.LostClear != s.lc {
			t.Errorf("step %d (%d,%d): new %v,%v lost %d,%d; want %v,%v %d,%d", i, s.a, s.c, e.NewAssert, e.NewClear, e.LostAssert, e.LostClear, s.newA, s.newC, s.la, s.lc)
		}
		want := [2]PPSEdge{{int64(i), s.a, s.newA, s.la}, {-int64(i), s.c, s.newC, s.lc}}
		if got := e.Edges(); got != want {
			t.Errorf("step %d: edges %+v, want %+v", i, got, want)
		}
	}
	ra, rc := tr.Received()
	la, lc := tr.Lost()
	if ra != 4 || rc != 3 || la != 2 || lc != 1 || tr.Anomalies() != 3 {
		t.Errorf("received %d,%d lost %d,%d anomalies %d; want 4,3 2,1 3", ra, rc, la, lc, tr.Anomalies())
	}
}
