package agent

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// BenchmarkSlaveEventSync is one Sync from ptp4l's slave event monitor, from
// its datagram (ptp4l 3.1.1's, golden) to its ptp4l_sync record: decode,
// ptp4l's offset computation, the record with its fields. The ring between
// reader and shipper is measured elsewhere (collect).
func BenchmarkSlaveEventSync(b *testing.B) {
	s, err := os.ReadFile("../ptp/testdata/slave_rx_sync_timing_ptp4l311.hex")
	if err != nil {
		b.Fatal(err)
	}
	msg, _ := hex.DecodeString(strings.TrimSpace(string(s)))
	d := newPtp4lSlaveEvents(nil, ptp.DefaultDelayFilterLength, timebase.DomainRealtime, nil)
	recs := make([]ptp.SlaveTiming, 0, 4)
	batch := &collect.Batch{Host: "bench", Records: make([]record.Record, 0, 1024)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		recs, _, err = ptp.DecodeSlaveEvents(msg, recs[:0])
		if err != nil {
			b.Fatal(err)
		}
		e := slaveEvent{SlaveTiming: recs[0]}
		e.RxNS += int64(i) // a Sync a nanosecond on: no bumps
		if i == 0 {
			d.offsets.Delay(&ptp.SlaveTiming{Kind: ptp.SlaveDelay, Master: e.Master, TxNS: e.RxNS, RxNS: e.RxNS + 40_000})
		}
		d.Emit(batch, &e)
		if len(batch.Records) == cap(batch.Records) {
			batch.Records = batch.Records[:0]
		}
	}
}
