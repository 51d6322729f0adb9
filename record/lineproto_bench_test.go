package record

import "testing"

func BenchmarkEncode(b *testing.B) {
	recs := make([]Record, 100)
	for i := range recs {
		recs[i] = Record{
			Measurement: "phc_offset",
			Tags:        []Tag{{"host", "bbb-1"}, {"device", "ptp0"}, {"clock", "realtime"}},
			Fields:      []Field{Int("offset_ns", -37000000312+int64(i)), Int("delay_ns", 1520), String("method", "extended")},
			TimeNS:      1795000000123456789 + int64(i),
		}
	}
	var e Encoder
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf, _, _ = e.Append(buf[:0], recs)
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
}
