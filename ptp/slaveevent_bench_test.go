package ptp

import "testing"

// BenchmarkDecodeSlaveEvents is one Sync's datagram from ptp4l's slave event
// monitor (golden) decoded and put through ptp4l's offset computation.
func BenchmarkDecodeSlaveEvents(b *testing.B) {
	msg := golden(b, "slave_rx_sync_timing_ptp4l311.hex")
	recs := make([]SlaveTiming, 0, 4)
	o := NewOffsets(DefaultDelayFilterLength)
	b.ReportAllocs()
	for b.Loop() {
		recs, _, _ = DecodeSlaveEvents(msg, recs[:0])
		o.Sync(&recs[0])
		o.Delay(&SlaveTiming{Kind: SlaveDelay, Master: recs[0].Master, TxNS: recs[0].RxNS, RxNS: recs[0].RxNS + 40_000})
	}
}
