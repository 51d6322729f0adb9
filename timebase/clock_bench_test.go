package timebase

import "testing"

func BenchmarkClockRead(b *testing.B) {
	for _, c := range []SystemClock{Realtime, MonotonicRaw, TAI} {
		b.Run(c.Domain().String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Now(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTranslate(b *testing.B) {
	tr := NewTranslator(DomainMonotonicRaw, PHC(0), 32)
	for i := int64(0); i < 32; i++ {
		tr.Add(Sample{Local: i * 1e9, Ref: i*1e9 + 37e9 + i*25_000, DelayNS: 500})
	}
	ts := Timestamp{NS: 40e9, Domain: DomainMonotonicRaw}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Translate(ts); err != nil {
			b.Fatal(err)
		}
	}
}
