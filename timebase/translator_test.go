package timebase

import (
	"errors"
	"testing"
)

func TestTranslatorRoundTrip(t *testing.T) {
	tr := NewTranslator(DomainMonotonicRaw, PHC(0), 16)
	if _, err := tr.Translate(Timestamp{NS: 1, Domain: DomainMonotonicRaw}); !errors.Is(err, ErrNoModel) {
		t.Fatalf("empty translator: %v, want ErrNoModel", err)
	}
	// PHC runs 25 ppm fast and 37 s ahead of MONOTONIC_RAW.
	phcAt := func(raw int64) int64 { return raw + 37e9 + (raw-5e9)*25/1_000_000 }
	tr.Add(Sample{Local: 5e9, Ref: phcAt(5e9), DelayNS: 800})
	one, err := tr.Translate(Timestamp{NS: 6e9, Domain: DomainMonotonicRaw})
	if err != nil {
		t.Fatal(err)
	}
	// One sample: offset known, skew not; the uncertainty must cover 500 ppm over 1 s.
	if abs64(one.NS-phcAt(6e9)) > one.UncertaintyNS || one.UncertaintyNS < 500_000 {
		t.Fatalf("one-sample translation %v, truth %d", one, phcAt(6e9))
	}
	for i := int64(1); i < 40; i++ {
		raw := 5e9 + i*250e6
		tr.Add(Sample{Local: raw, Ref: phcAt(raw), DelayNS: 800})
	}
	raw := int64(20e9)
	got, err := tr.Translate(Timestamp{NS: raw, Domain: DomainMonotonicRaw, UncertaintyNS: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got.Domain != PHC(0) || abs64(got.NS-phcAt(raw)) > 1 {
		t.Fatalf("translate %d: %v, want %d in phc0", raw, got, phcAt(raw))
	}
	if got.UncertaintyNS < 3+400 || got.UncertaintyNS > 3+400+2 {
		t.Fatalf("uncertainty %d, want the input's 3 plus half the 800 ns read window", got.UncertaintyNS)
	}
	back, err := tr.Translate(got)
	if err != nil || back.Domain != DomainMonotonicRaw || abs64(back.NS-raw) > 1 {
		t.Fatalf("translate back: %v %v, want %d", back, err, raw)
	}
	if _, err := tr.Translate(Timestamp{NS: raw, Domain: DomainTAI}); err == nil {
		t.Fatal("a TAI timestamp was accepted by a monotonic_raw->phc0 translator")
	}
	tr.Reset()
	if _, err := tr.Model(); !errors.Is(err, ErrNoModel) {
		t.Fatalf("after reset: %v", err)
	}
}
