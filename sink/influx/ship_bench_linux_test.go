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
// influxd 1.8, one request at a time. One op is one batch of 5000 points.
// The spool (the agent's defaults: gzip'd entries of 1000 points) is filled
// before the timer starts, as after an outage: the shipper's time is reading
// it back, the client library, the answers and the acknowledgements; the raw
// writer holds the batches in memory and posts them with net/http (gzip with
// one reused writer). Each writer's points are new to influxd (their own run
// tag, of the same length).
//
// shipper and raw drain b.N batches each and report points/s. alternating
// sends each batch through both, taking turns at going first, so that both
// see the same load on a shared machine: it reports both rates and
// shipper/raw.
func BenchmarkShipVsRaw(b *testing.B) {
	in := testbed.StartInfluxd(b, db)
	for _, gz := range []bool{false, true} {
		for _, writer := range []string{"shipper", "raw", "alternating"} {
			b.Run(fmt.Sprintf("gzip=%v/%s", gz, writer), func(b *testing.B) {
				tag := time.Now().UnixNano()
				switch writer {
				case "shipper":
					run := fmt.Sprintf("ship-%d", tag)
					sp := filledSpool(b, b.N*benchBatch, run)
					q := newGatedQueue(sp)
					sh := benchShipper(b, in.URL, q, gz)
					b.ReportAllocs()
					b.ResetTimer()
					q.release(b.N * benchBatch / 1000)
					for range b.N {
						<-q.acked
					}
					b.StopTimer()
					sh()
					b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "points/s")
					checkRun(b, in, run)
				case "raw":
					run := fmt.Sprintf("rawx-%d", tag)
					batches := spoolBatches(b, filledSpool(b, b.N*benchBatch, run))
					post := rawPoster(b, in.URL, gz)
					b.ReportAllocs()
					b.ResetTimer()
					for _, batch := range batches {
						post(batch)
					}
					b.StopTimer()
					b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "points/s")
					checkRun(b, in, run)
				default:
					benchAlternating(b, in, gz, tag)
				}
			})
		}
	}
}

func benchAlternating(b *testing.B, in *testbed.Influxd, gz bool, tag int64) {
	shipRun, rawRun := fmt.Sprintf("ship-%d", tag), fmt.Sprintf("rawx-%d", tag)
	q := newGatedQueue(filledSpool(b, b.N*benchBatch, shipRun))
	batches := spoolBatches(b, filledSpool(b, b.N*benchBatch, rawRun))
	stop := benchShipper(b, in.URL, q, gz)
	post := rawPoster(b, in.URL, gz)
	var shipped, posted time.Duration
	ship := func() {
		start := time.Now()
		q.release(benchBatch / 1000)
		<-q.acked
		shipped += time.Since(start)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i, batch := range batches {
		if i%2 == 0 {
			ship()
		}
		start := time.Now()
		post(batch)
		posted += time.Since(start)
		if i%2 == 1 {
			ship()
		}
	}
	b.StopTimer()
	stop()
	points := float64(b.N * benchBatch)
	b.ReportMetric(points/shipped.Seconds(), "shipper-points/s")
	b.ReportMetric(points/posted.Seconds(), "raw-points/s")
	b.ReportMetric(posted.Seconds()/shipped.Seconds(), "shipper/raw")
	checkRun(b, in, shipRun)
	checkRun(b, in, rawRun)
}

func checkRun(b *testing.B, in *testbed.Influxd, run string) {
	if got := countRun(in, run); got != int64(b.N*benchBatch) {
		b.Fatalf("influxd holds %d points of %s, want %d", got, run, b.N*benchBatch)
	}
}

// gatedQueue is a spool whose reader hands out only the entries released to
// it, and which says when a batch is acknowledged: the benchmark sends a
// batch when it chooses.
type gatedQueue struct {
	spoolQueue
	gate  chan int
	acked chan struct{}
}

func newGatedQueue(sp *spool.Spool) *gatedQueue {
	return &gatedQueue{spoolQueue: spoolQueue{sp}, gate: make(chan int, 1<<16), acked: make(chan struct{}, 1<<16)}
}

func (q *gatedQueue) release(entries int) { q.gate <- entries }

func (q *gatedQueue) reader() entryReader { return &gatedReader{Reader: q.NewReader(), gate: q.gate} }

func (q *gatedQueue) Ack(b spool.Batch, dead int) error {
	err := q.spoolQueue.Ack(b, dead)
	q.acked <- struct{}{}
	return err
}

type gatedReader struct {
	*spool.Reader
	gate    chan int
	allowed int
}

func (r *gatedReader) Next(ctx context.Context) (spool.Entry, error) {
	for r.allowed == 0 {
		select {
		case n := <-r.gate:
			r.allowed += n
		case <-ctx.Done():
			return spool.Entry{}, ctx.Err()
		}
	}
	r.allowed--
	return r.Reader.Next(ctx)
}

func (r *gatedReader) TryNext() (spool.Entry, bool, error) {
	if r.allowed == 0 {
		select {
		case n := <-r.gate:
			r.allowed += n
		default:
			return spool.Entry{}, false, nil
		}
	}
	r.allowed--
	return r.Reader.TryNext()
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

// benchShipper runs a shipper of q's spool to influxd and returns the
// function that stops it, checking it sent one request per batch.
func benchShipper(b *testing.B, url string, q queue, gz bool) func() {
	cfg := influxConfig(url)
	cfg.Gzip, cfg.BatchPoints = gz, benchBatch
	sh, err := newWithClient(cfg, q)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sh.Run(ctx) }()
	return func() {
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

// rawPoster returns a function that posts a batch to influxd's /api/v2/write
// with net/http, as the shipper's requests are made.
func rawPoster(b *testing.B, base string, gz bool) func([]byte) {
	url := base + "/api/v2/write?bucket=" + db + "/autogen&org=&precision=ns"
	client := &http.Client{Timeout: 5 * time.Second}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	return func(batch []byte) {
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
