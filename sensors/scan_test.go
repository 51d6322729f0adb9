package sensors

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/monagent/monagent/sensors/sensorstest"
)

func TestParseScanType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ScanType
	}{
		{"le:u12/16>>0", ScanType{Bits: 12, Storage: 16, Repeat: 1}},
		{"le:s12/16>>4\n", ScanType{Signed: true, Bits: 12, Storage: 16, Shift: 4, Repeat: 1}},
		{"be:s24/32>>8", ScanType{BigEndian: true, Signed: true, Bits: 24, Storage: 32, Shift: 8, Repeat: 1}},
		{"le:s64/64>>0", ScanType{Signed: true, Bits: 64, Storage: 64, Repeat: 1}},
		{"be:u16/16X3>>0", ScanType{BigEndian: true, Bits: 16, Storage: 16, Repeat: 3}},
	} {
		got, err := ParseScanType(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "le", "xe:u12/16>>0", "le:x12/16>>0", "le:u12>>0", "le:u12/16", "le:u12/12>>8",
		"le:u0/16>>0", "le:u12/24>>0", "le:u12/16X0>>0", "le:ua/16>>0", "le:u12/16>>-1"} {
		if _, err := ParseScanType(bad); !errors.Is(err, ErrScanType) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestDecodeValues(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		hex  string
		want int64
	}{
		{"le:u12/16>>0", "ff0f", 4095},
		{"le:s12/16>>0", "ff0f", -1},
		{"le:s12/16>>4", "f0ff", -1},
		{"le:s12/16>>4", "0080", -2048},
		{"be:u16/16>>0", "1234", 0x1234},
		{"be:s24/32>>8", "ffffff00", -1},
		{"le:u8/8>>0", "80", 128},
		{"le:s8/8>>0", "80", -128},
		{"le:s64/64>>0", "0100000000000080", -9223372036854775807},
		{"le:u32/32>>0", "fdffffff", 4294967293},
	} {
		typ, err := ParseScanType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := hex.DecodeString(tc.hex)
		if got := typ.value(b); got != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.typ, tc.hex, got, tc.want)
		}
	}
}

// TestLayoutFollowsTheKernel: elements aligned to their size, the record to
// the largest (iio_compute_scan_bytes).
func TestLayoutFollowsTheKernel(t *testing.T) {
	u16, _ := ParseScanType("le:u12/16>>0")
	s32, _ := ParseScanType("le:s24/32>>0")
	ts, _ := ParseScanType("le:s64/64>>0")
	l, err := NewLayout([]ScanChannel{{Name: "timestamp", Index: 9, Type: ts}, {Name: "b", Index: 2, Type: s32}, {Name: "a", Index: 0, Type: u16}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Size != 16 || l.Channels[0].Name != "a" || l.Channels[0].Offset != 0 || l.Channels[1].Offset != 4 || l.Channels[2].Offset != 8 {
		t.Errorf("layout %+v", l)
	}
	l, _ = NewLayout([]ScanChannel{{Name: "a", Index: 0, Type: u16}, {Name: "b", Index: 1, Type: s32}, {Name: "c", Index: 2, Type: u16}})
	if l.Size != 12 || l.Channels[2].Offset != 8 {
		t.Errorf("layout %+v", l)
	}
	if _, err := NewLayout([]ScanChannel{{Name: "a", Index: 1, Type: u16}, {Name: "b", Index: 1, Type: u16}}); err == nil {
		t.Error("two channels at one index")
	}
	if err := l.Decode(make([]byte, 11), make([]int64, 3)); err == nil {
		t.Error("a short record decoded")
	}
	if err := l.Decode(make([]byte, 12), make([]int64, 2)); err == nil {
		t.Error("decoded into too few values")
	}
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	l := adcLayout(t)
	rec, _ := hex.DecodeString(adcRecords[:32])
	out := make([]int64, 3)
	if n := testing.AllocsPerRun(100, func() { l.Decode(rec, out) }); n != 0 {
		t.Errorf("Decode allocates %v times", n)
	}
}

func adcLayout(t testing.TB) Layout {
	u, _ := ParseScanType("le:u12/16>>0")
	ts, _ := ParseScanType("le:s64/64>>0")
	l, err := NewLayout([]ScanChannel{{Name: "voltage0", Index: 0, Type: u}, {Name: "voltage1", Index: 1, Type: u}, {Name: "timestamp", Index: 8, Type: ts}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// FuzzScanElements: any type strings and record bytes: parse, lay out and
// decode without panicking; a layout's elements stay inside its record.
func FuzzScanElements(f *testing.F) {
	f.Add("le:u12/16>>0", "le:s64/64>>0", []byte{0, 8, 0xff, 0x0f, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add("be:s24/32>>8", "le:u16/16X3>>0", make([]byte, 12))
	f.Add("le:s12/16>>4", "be:u8/8>>0", []byte{0xf0, 0xff, 0x80, 0})
	f.Fuzz(func(t *testing.T, a, b string, rec []byte) {
		ta, errA := ParseScanType(a)
		tb, errB := ParseScanType(b)
		if errA != nil || errB != nil {
			return
		}
		l, err := NewLayout([]ScanChannel{{Name: "a", Index: 0, Type: ta}, {Name: "b", Index: 1, Type: tb}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Channels {
			if c.Offset+c.Type.bytes() > l.Size {
				t.Fatalf("%s at %d+%d outside a record of %d", c.Name, c.Offset, c.Type.bytes(), l.Size)
			}
		}
		out := make([]int64, 2)
		if len(rec) >= l.Size {
			if err := l.Decode(rec[:l.Size], out); err != nil {
				t.Fatal(err)
			}
		} else if err := l.Decode(rec, out); err == nil {
			t.Fatal("a short record decoded")
		}
	})
}

// FuzzDecodeScan: any two channel types, with or without the timestamp,
// any scale and offset, any record bytes: a record decodes into a scan
// without panicking, the timestamp in Stamp and the others, converted, in
// Values in their order.
func FuzzDecodeScan(f *testing.F) {
	recs, _ := hex.DecodeString(sensorstest.ADCRecords)
	f.Add("le:u12/16>>0", "le:u12/16>>0", true, 0.439453125, 0.0, recs[:16])
	f.Add("le:u12/16>>0", "le:u12/16>>0", false, 0.439453125, 0.0, recs[:4])
	f.Add("be:s24/32>>8", "le:u16/16X3>>0", true, -1.5, 20.0, make([]byte, 24))
	f.Fuzz(func(t *testing.T, a, c string, stamped bool, scale, offset float64, rec []byte) {
		ta, errA := ParseScanType(a)
		tc, errC := ParseScanType(c)
		if errA != nil || errC != nil {
			return
		}
		chs := []ScanChannel{{Name: "voltage0", Index: 0, Type: ta}, {Name: "temp", Index: 1, Type: tc}}
		if stamped {
			ts, _ := ParseScanType("le:s64/64>>0")
			chs = append(chs, ScanChannel{Name: "timestamp", Index: 2, Type: ts})
		}
		l, err := NewLayout(chs)
		if err != nil || len(rec) < l.Size {
			return
		}
		b := &Buffer{Layout: l, tsIndex: -1, kinds: []Kind{KindVoltage, KindTemperature, 0},
			scale: []float64{scale, scale * 1e3, 1}, offset: []float64{offset, 0, 0}}
		if stamped {
			b.tsIndex = 2
		}
		raw := make([]int64, len(l.Channels))
		if err := l.Decode(rec[:l.Size], raw); err != nil {
			t.Fatal(err)
		}
		sc := Scan{Stamp: -1, Values: [MaxScanChannels]int64{7, 7, 7}}
		b.decodeScan(raw, &sc)
		want := Scan{}
		if stamped {
			want.Stamp = raw[2]
		}
		want.Values[0], _ = b.Value(0, raw[0])
		want.Values[1], _ = b.Value(1, raw[1])
		want.Values[2] = 7 // not a channel: left alone
		if sc != want {
			t.Fatalf("scan %+v, want %+v", sc, want)
		}
	})
}
