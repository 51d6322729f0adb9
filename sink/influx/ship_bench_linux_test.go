package influx

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
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

// benchBatch is the batch both writers of BenchmarkShipVsRaw send.
const benchBatch = 5000

// BenchmarkShipVsRaw (issue 20 item 6) measures the shipper against a raw
// HTTP writer posting the same line protocol in the same batches to the same
// influxd 1.8, side by side in one run, one request at a time. One op is one
// batch of 5000 points; both report points/s. The spool (the agent's
// defaults: gzip'd entries) is filled before the timer starts, as after an
// outage: the shipper's time is reading it back, the client library, the
// answers and the acknowledgements; the raw writer holds the batches in
// memory and posts them with net/http (gzip with one reused writer). Each
// writer's points are new series values (their own run tag).
func BenchmarkShipVsRaw(b *testing.B) {
	in := testbed.StartInfluxd(b, db)
	for _, gz := range []bool{false, true} {
		for _, writer := range []string{"shipper", "raw"} {
			b.Run(fmt.Sprintf("gzip=%v/%s", gz, writer), func(b *testing.B) {
				run := fmt.Sprintf("%s-%v-%d", writer, gz, time.Now().UnixNano())
				sp := filledSpool(b, b.N*benchBatch, run)
				var ship func()
				if writer == "shipper" {
					ship = shipperRun(b, in.URL, sp, gz)
				} else {
					ship = rawRun(b, in.URL, spoolBatches(b, sp), gz)
				}
				b.ReportAllocs()
				b.ResetTimer()
				ship()
				b.StopTimer()
				b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "points/s")
				if got := countRun(in, run); got != int64(b.N*benchBatch) {
					b.Fatalf("influxd holds %d points of %d", got, b.N*benchBatch)
				}
			})
		}
	}
}

// filledSpool is a spool holding n points of run in entries of 1000, as the
// agent writes them (compressed).
func filledSpool(b *testing.B, n int, run string) *spool.Spool {
	sp, err := spool.Open(spool.Options{Dir: b.TempDir(), MaxBytes: 1 << 40, Compress: true, FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sp.Close() })
	recs := make([]record.Record, 1000)
	for i := 0; i < n; i += len(recs) {
		for k := range recs {
			recs[k] = seqRecord(int64(i+k), run)
		}
		if err := sp.Append(recs); err != nil {
			b.Fatal(err)
		}
		if err := sp.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := sp.Sync(); err != nil {
		b.Fatal(err)
	}
	return sp
}

// shipperRun returns a function that ships sp until every point is
// acknowledged.
func shipperRun(b *testing.B, url string, sp *spool.Spool, gz bool) func() {
	cfg := influxConfig(url)
	cfg.Gzip, cfg.BatchPoints = gz, benchBatch
	sh, err := New(cfg, sp)
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sh.Run(ctx) }()
		for sp.Stats().Pending > 0 {
			time.Sleep(100 * time.Microsecond)
		}
		cancel()
		<-done
		if st := sh.Stats(); st.Requests != st.Batches || st.DeadLettered != 0 {
			b.Fatalf("not one request per batch: %+v", st)
		}
	}
}

// spoolBatches reads sp back as batches of benchBatch points: the bytes the
// shipper sends.
func spoolBatches(b *testing.B, sp *spool.Spool) [][]byte {
	rd := sp.NewReader()
	defer rd.Close()
	var out [][]byte
	var cur []byte
	points := 0
	for {
		e, ok, err := rd.TryNext()
		if err != nil {
			b.Fatal(err)
		}
		if !ok {
			break
		}
		cur = append(cur, e.Lines...)
		if points += int(e.Points); points == benchBatch {
			out, cur, points = append(out, cur), nil, 0
		}
	}
	if points != 0 {
		b.Fatalf("%d points left over", points)
	}
	return out
}

// rawRun returns a function that posts batches to influxd's /api/v2/write one
// after the other with net/http, as the shipper's requests are made.
func rawRun(b *testing.B, base string, batches [][]byte, gz bool) func() {
	url := base + "/api/v2/write?bucket=" + db + "/autogen&org=&precision=ns"
	client := &http.Client{Timeout: 5 * time.Second}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	return func() {
		for _, batch := range batches {
			body := batch
			if gz {
				zbuf.Reset()
				zw.Reset(&zbuf)
				zw.Write(batch)
				zw.Close()
				body = zbuf.Bytes()
			}
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Token user:pass")
			req.Header.Set("Content-Type", "text/plain; charset=utf-8")
			if gz {
				req.Header.Set("Content-Encoding", "gzip")
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Fatalf("influxd answered %s", resp.Status)
			}
		}
	}
}
