package ptp

import (
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

// primed returns a slave following gm with ten path delays measured.
func primed() *Slave {
	s := &Slave{Port: us}
	now := time.Unix(1_795_000_000, 0)
	s.General(announce(gm, 128), now)
	for i := 0; i < 10; i++ {
		base := int64(1_795_000_000_000_000_000) + int64(i)*1e9
		s.Event(syncMsg(gm, uint16(i), true, 0, 0), base+12_000, now)
		s.DelayReq(make([]byte, 64), now)
		s.Sent(base + 100_000)
		s.General(followUp(gm, uint16(i), base, 0), now)
		s.General(delayResp(gm, uint16(i+1), us, base+111_000, 0), now)
	}
	return s
}

// TestMeasurementDoesNotAllocate pins the per-Sync path: decode Sync and
// Follow_Up, take the median path delay, compute the offset.
func TestMeasurementDoesNotAllocate(t *testing.T) {
	s := primed()
	sy, fu := syncMsg(gm, 100, true, 0, 0), followUp(gm, 100, 5, 0)
	now := time.Unix(1_795_000_100, 0)
	if n := testing.AllocsPerRun(1000, func() {
		s.Event(sy, 1_000_000, now)
		if ex, err := s.General(fu, now); err != nil || ex == nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a measurement allocates %v times", n)
	}
}

// BenchmarkDecode decodes the messages a slave receives, with the library's
// decoders into reused structs.
func BenchmarkDecode(b *testing.B) {
	var sm protocol.SyncDelayReq
	var fu protocol.FollowUp
	var dr protocol.DelayResp
	var an protocol.Announce
	msgs := [][]byte{syncMsg(gm, 1, true, 0, 0), followUp(gm, 1, 5, 0), delayResp(gm, 1, us, 9, 0), announce(gm, 128)}
	b.ReportAllocs()
	for b.Loop() {
		if sm.UnmarshalBinary(msgs[0]) != nil || fu.UnmarshalBinary(msgs[1]) != nil || dr.UnmarshalBinary(msgs[2]) != nil || an.UnmarshalBinary(msgs[3]) != nil {
			b.Fatal("decode")
		}
	}
}

// BenchmarkMeasure is the offset computation path for one two-step Sync:
// header checks, decode, median of ten path delays, offset.
func BenchmarkMeasure(b *testing.B) {
	s := primed()
	sy, fu := syncMsg(gm, 100, true, 0, 0), followUp(gm, 100, 5, 0)
	now := time.Unix(1_795_000_100, 0)
	b.ReportAllocs()
	for b.Loop() {
		s.Event(sy, 1_000_000, now)
		if ex, _ := s.General(fu, now); ex == nil {
			b.Fatal("no measurement")
		}
	}
}
