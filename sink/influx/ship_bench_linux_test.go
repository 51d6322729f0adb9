package influx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// BenchmarkShipToInfluxd measures points per second end to end: appended to the
// spool, written to disk, read back and acknowledged by a local influxd 1.8.
// One op is one point.
func BenchmarkShipToInfluxd(b *testing.B) {
	in := testbed.StartInfluxd(b, db)
	for _, c := range []struct {
		gzip  bool
		batch int
	}{{false, 5000}, {true, 5000}, {false, 20000}} {
		b.Run(fmt.Sprintf("gzip=%v/batch=%d", c.gzip, c.batch), func(b *testing.B) {
			sp, err := spool.Open(spool.Options{Dir: b.TempDir(), MaxBytes: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			defer sp.Close()
			cfg := influxConfig(in.URL)
			cfg.Gzip, cfg.BatchPoints, cfg.BatchInterval = c.gzip, c.batch, 50*time.Millisecond
			sh, err := New(cfg, sp)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
			recs := make([]record.Record, 1000)
			b.ResetTimer()
			go sh.Run(ctx)
			for i := 0; i < b.N; i += len(recs) {
				n := min(len(recs), b.N-i)
				for k := 0; k < n; k++ {
					recs[k] = seqRecord(int64(i+k), run)
				}
				sp.Append(recs[:n])
			}
			for sp.Stats().Acknowledged < uint64(b.N) {
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
