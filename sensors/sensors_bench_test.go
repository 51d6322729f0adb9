package sensors

import (
	"encoding/hex"
	"testing"
)

// BenchmarkSensorRead: one hwmon reading (pread of the attribute in place,
// parse, convert). On a fixture file; sysfs adds the driver's own read.
func BenchmarkSensorRead(b *testing.B) {
	fs := board(b)
	ss, err := fs.Hwmon()
	if err != nil {
		b.Fatal(err)
	}
	defer CloseAll(ss)
	s := ss[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecord: one buffered ADC record (two 12-bit channels and
// the timestamp) decoded.
func BenchmarkDecodeRecord(b *testing.B) {
	l := adcLayout(b)
	rec, _ := hex.DecodeString(adcRecords[:32])
	out := make([]int64, 3)
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if err := l.Decode(rec, out); err != nil {
			b.Fatal(err)
		}
	}
}
