package timeapi

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// The Go structs are the documented layout, on every architecture (run under
// GOARCH=arm too): sizes, offsets and 8-alignment of every 64-bit field.
func TestLayout(t *testing.T) {
	var h header
	var s section
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"header", unsafe.Sizeof(h), HeaderSize},
		{"section", unsafe.Sizeof(s), SectionSize},
		{"segment", unsafe.Sizeof(layout{}), SegmentSize},
		{"sections", unsafe.Offsetof(layout{}.sections), HeaderSize},
		{"magic", unsafe.Offsetof(h.magic), offMagic},
		{"version", unsafe.Offsetof(h.version), offVersion},
		{"header_size", unsafe.Offsetof(h.headerSize), offHeaderSize},
		{"segment_size", unsafe.Offsetof(h.segmentSize), offSegmentSize},
		{"section_size", unsafe.Offsetof(h.sectionSize), offSectionSize},
		{"section_count", unsafe.Offsetof(h.sectionCount), offSectionCount},
		{"epoch", unsafe.Offsetof(h.epoch), offEpoch},
		{"writer_pid", unsafe.Offsetof(h.writerPID), offWriterPID},
		{"name", unsafe.Offsetof(s.name), offName},
		{"seq", unsafe.Offsetof(s.seq), offSeq},
		{"state", unsafe.Offsetof(s.state), offState},
		{"base_ns", unsafe.Offsetof(s.baseNS), offBaseNS},
		{"true_ns", unsafe.Offsetof(s.trueNS), offTrueNS},
		{"rate_ppb", unsafe.Offsetof(s.ratePPB), offRatePPB},
		{"bound_ns", unsafe.Offsetof(s.boundNS), offBoundNS},
		{"growth_ppb", unsafe.Offsetof(s.growthPPB), offGrowthPPB},
		{"void_ns", unsafe.Offsetof(s.voidNS), offVoidNS},
		{"realtime_ns", unsafe.Offsetof(s.realtimeNS), offRealtimeNS},
		{"updates", unsafe.Offsetof(s.updates), offUpdates},
		{"rt_step_from_ns", unsafe.Offsetof(s.stepFromNS), offRTStepFromNS},
		{"rt_step_to_ns", unsafe.Offsetof(s.stepToNS), offRTStepToNS},
		{"rt_step_ns", unsafe.Offsetof(s.stepNS), offRTStepNS},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if MaxSections != 15 {
		t.Errorf("MaxSections %d", MaxSections)
	}
}

// The bytes a writer leaves, against the table in docs/timeapi.md
// (little-endian machines: amd64, arm, arm64).
func TestGoldenBytes(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the golden bytes are little-endian")
	}
	path := filepath.Join(t.TempDir(), "time.shm")
	w := create(t, path, "system", "global")
	w.Publish(0, Model{State: Locked, BaseNS: 0x0102030405060708, TrueNS: 0x1112131415161718, RatePPB: -2,
		BoundNS: 0x2122, GrowthPPB: 0x3132, VoidNS: 0x4142434445464748, RealtimeNS: 0x5152535455565758})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != SegmentSize {
		t.Fatalf("%d bytes", len(b))
	}
	hdr := hex.EncodeToString(b[:36])
	wantHdr := "4d4f4e4154494d45" + "01000000" + "40000000" + "00100000" + "00010000" + "02000000" + "04000000"
	if hdr[:len(wantHdr)] != wantHdr {
		t.Errorf("header\n got %s\nwant %s", hdr[:len(wantHdr)], wantHdr)
	}
	sec := hex.EncodeToString(b[HeaderSize : HeaderSize+sectionUsed])
	want := strings.Join([]string{
		"73797374656d0000", "0000000000000000", // "system", NUL-padded
		"06000000", "01000000", // seq (4 after Create, 6 after one Publish), state LOCKED
		"0807060504030201", "1817161514131211", "feffffffffffffff", "2221000000000000",
		"3231000000000000", "4847464544434241", "5857565554535251",
		"0100000000000000",                                         // updates
		"0000000000000000", "0000000000000000", "0000000000000000", // no REALTIME step seen
	}, "")
	if sec != want {
		t.Errorf("section 0\n got %s\nwant %s", sec, want)
	}
	for i, c := range b[HeaderSize+sectionUsed : HeaderSize+SectionSize] {
		if c != 0 {
			t.Fatalf("reserved byte %d of section 0 is %d", sectionUsed+i, c)
		}
	}
}
