package inventory

import (
	"math"
	"testing"
)

func TestFormatTimes(t *testing.T) {
	for _, c := range []struct {
		ns             int64
		offset, length string
	}{
		{0, "0 ns", "0 ns"},
		{850, "+850 ns", "850 ns"},
		{-850, "-850 ns", "-850 ns"},
		{1234, "+1.234 µs", "1.234 µs"},
		{1520, "+1.52 µs", "1.52 µs"},
		{-12500000, "-12.5 ms", "-12.5 ms"},
		{999999, "+999.999 µs", "999.999 µs"},
		{1000000, "+1 ms", "1 ms"},
		{1234567, "+1.235 ms", "1.235 ms"},
		{999999600, "+0.9999996 s", "0.9999996 s"},
		{-37000000123, "-37.000000123 s", "-37.000000123 s"},
		{59999999999, "+59.999999999 s", "59.999999999 s"},
		{60e9, "+00:01:00", "00:01:00"},
		{(3*86400+4*3600+12*60+5)*1e9 + 5e8, "+3 d 04:12:05.5", "3 d 04:12:05.5"},
		{math.MinInt64, "-106751 d 23:47:16.854775808", "-106751 d 23:47:16.854775808"},
	} {
		if got := fmtOffset(c.ns); got != c.offset {
			t.Errorf("fmtOffset(%d) = %q, want %q", c.ns, got, c.offset)
		}
		if got := fmtDuration(c.ns); got != c.length {
			t.Errorf("fmtDuration(%d) = %q, want %q", c.ns, got, c.length)
		}
	}
	if got := fmtDate(fixtureRealtimeNS, "UTC"); got != "2026-11-23 10:15:02.123456789 UTC" {
		t.Errorf("fmtDate = %q", got)
	}
}
