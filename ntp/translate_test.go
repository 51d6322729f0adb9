package ntp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/monagent/monagent/ntp/ntptest"
	"github.com/monagent/monagent/sockts"
)

const (
	start     = int64(1_795_000_000_000_000_000)
	phcAhead  = int64(37_000_000_123) // PHC − REALTIME: a PHC on TAI, and some
	trueOff   = int64(5_000)          // local − server
	oneWay    = int64(20_000)
	processNS = int64(7_000)
)

func fake(tx, rx sockts.Source) *ntptest.Server {
	return &ntptest.Server{Addr: server, Now: start, Step: 1_000_000_000, OffsetNS: trueOff, DelayNS: oneWay,
		ProcessingNS: processNS, PHCOffsetNS: phcAhead, TxSource: tx, RxSource: rx}
}

// TestEachStampTranslatedByItsOwnSource: T1 and T4 are each moved to REALTIME
// by their own source: a hardware stamp through the PHC model, a software or
// user-space one not at all. Translating a user-space T1 as if it were PHC
// time (the old agent's translate) would be off by the PHC's offset.
func TestEachStampTranslatedByItsOwnSource(t *testing.T) {
	hw, sw, user := sockts.SourceHardware, sockts.SourceSoftware, sockts.SourceUser
	for _, c := range []struct {
		tx, rx sockts.Source
		mixed  bool
	}{{hw, hw, false}, {user, hw, true}, {hw, sw, true}, {sw, sw, false}, {user, user, false}, {sw, user, true}} {
		t.Run(c.tx.String()+"/"+c.rx.String(), func(t *testing.T) {
			f := fake(c.tx, c.rx)
			calls := 0
			toRT := func(ns int64) (int64, error) { calls++; return ns - phcAhead, nil }
			p := NewProber(ProbeConfig{Server: server, Basic: true, ToRealtime: toRT}, f)
			res, err := p.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			s := res.Samples[res.Best]
			t1 := start + f.Step
			t4 := t1 + 2*oneWay + processNS
			if s.T1 != t1 || s.T4 != t4 {
				t.Errorf("T1 %d T4 %d, want REALTIME %d %d", s.T1, s.T4, t1, t4)
			}
			if s.OffsetNS != trueOff || s.DelayNS != 2*oneWay {
				t.Errorf("offset %d delay %d, want %d %d", s.OffsetNS, s.DelayNS, trueOff, 2*oneWay)
			}
			if s.Mixed != c.mixed || s.TxSource != c.tx || s.RxSource != c.rx {
				t.Errorf("mixed %v sources %v/%v", s.Mixed, s.TxSource, s.RxSource)
			}
			want := 0
			for _, src := range []sockts.Source{c.tx, c.rx} {
				if src == hw {
					want++
				}
			}
			if calls != want {
				t.Errorf("%d translations for %d hardware stamps", calls, want)
			}
		})
	}
}

func TestUntranslatableHardwareStampIsCountedNotUsed(t *testing.T) {
	f := fake(sockts.SourceUser, sockts.SourceHardware)
	noModel := errors.New("no model yet")
	p := NewProber(ProbeConfig{Server: server, Basic: true, Timeout: 10 * time.Millisecond,
		ToRealtime: func(int64) (int64, error) { return 0, noModel }}, f)
	if _, err := p.Poll(context.Background()); !errors.Is(err, noModel) {
		t.Fatalf("poll: %v", err)
	}
	if p.C.Untranslated.Load() != 1 || p.C.Replies.Load() != 0 {
		t.Fatalf("untranslated %d replies %d", p.C.Untranslated.Load(), p.C.Replies.Load())
	}
	// Without a translator at all (hardware stamps not asked for) as well.
	p = NewProber(ProbeConfig{Server: server, Basic: true}, fake(sockts.SourceHardware, sockts.SourceHardware))
	if _, err := p.Poll(context.Background()); err == nil || p.C.Untranslated.Load() != 1 {
		t.Fatalf("poll: %v, untranslated %d", err, p.C.Untranslated.Load())
	}
}

// TestBurstSamplesAreDistinctEvents: in interleaved mode each reply completes
// the exchange before it, so a burst's samples are the exchanges' own T4s; no
// two samples of the same mode share a T4 (they would be one point in
// InfluxDB). A server without kernel transmit timestamps repeats the basic
// transmit timestamp in its interleaved reply: that reply adds no sample (the
// old prober shipped the previous exchange a second time) and is counted.
func TestBurstSamplesAreDistinctEvents(t *testing.T) {
	for _, noKernelTx := range []bool{false, true} {
		f := fake(sockts.SourceSoftware, sockts.SourceSoftware)
		f.NoKernelTx = noKernelTx
		f.KernelTxLagNS = 3_000
		p := NewProber(ProbeConfig{Server: server, Burst: 4, BurstSpacing: time.Nanosecond}, f)
		seen := map[[2]int64]bool{}
		var n int
		for poll := 0; poll < 3; poll++ {
			res, err := p.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range res.Samples {
				mode := int64(0)
				if s.Interleaved {
					mode = 1
				}
				k := [2]int64{mode, s.T4}
				if seen[k] {
					t.Errorf("no kernel tx %v: two samples (interleaved %v) at T4 %d", noKernelTx, s.Interleaved, s.T4)
				}
				seen[k] = true
				n++
				// A basic sample's T3 (and any T3 of a server without kernel
				// transmit stamps) precedes the reply's departure by the
				// kernel's lag: its offset is off by half of it.
				want := trueOff
				if !s.Interleaved || noKernelTx {
					want += f.KernelTxLagNS / 2
				}
				if s.OffsetNS != want {
					t.Errorf("no kernel tx %v, interleaved %v: offset %d, want %d", noKernelTx, s.Interleaved, s.OffsetNS, want)
				}
			}
		}
		t.Logf("no kernel tx %v: %d samples from %d requests, %d interleaved, %d repeats", noKernelTx, n, p.C.Requests.Load(), p.C.Interleaved.Load(), p.C.Repeats.Load())
		if n+int(p.C.Repeats.Load()) != int(p.C.Requests.Load()) {
			t.Errorf("%d samples + %d repeats for %d requests", n, p.C.Repeats.Load(), p.C.Requests.Load())
		}
		if noKernelTx != (p.C.Repeats.Load() > 0) {
			t.Errorf("no kernel tx %v: %d repeats", noKernelTx, p.C.Repeats.Load())
		}
	}
}
