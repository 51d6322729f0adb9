package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink"
)

// memSink keeps what it is given.
type memSink struct {
	mu     sync.Mutex
	recs   []record.Record
	closed bool
}

func (m *memSink) Write(r []record.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r...)
	return nil
}

func (m *memSink) Close() error { m.closed = true; return nil }

func (m *memSink) count(meas string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.recs {
		if r.Measurement == meas {
			n++
		}
	}
	return n
}

// countingSource emits one record per collection, or fails, or has no data.
type countingSource struct {
	name  string
	mode  string // ok, fail, nodata
	n     int
	close bool
}

func (c *countingSource) Name() string            { return c.name }
func (c *countingSource) Interval() time.Duration { return 10 * time.Millisecond }
func (c *countingSource) Close() error            { c.close = true; return nil }
func (c *countingSource) Collect(ctx context.Context, b *collect.Batch) error {
	c.n++
	switch c.mode {
	case "fail":
		return errors.New("sensor on fire")
	case "nodata":
		return collect.ErrNoData
	}
	b.Add("tick", int64(c.n), []record.Tag{{Key: "source", Value: c.name}}, record.Int("n", int64(c.n)))
	return nil
}

// SelfFields reports a plain counter that Collect writes: the agent must take
// it on the collecting goroutine (the race detector fails the tests otherwise).
func (c *countingSource) SelfFields() []record.Field {
	return []record.Field{record.Int("collect_calls", int64(c.n))}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestAgentRunsSourcesAndStopsCleanly(t *testing.T) {
	cfg := Default()
	cfg.Host = "test-host"
	cfg.SelfMetrics.Interval = 50 * time.Millisecond
	ok := &countingSource{name: "ok"}
	bad := &countingSource{name: "bad", mode: "fail"}
	idle := &countingSource{name: "idle", mode: "nodata"}
	out := &memSink{}
	a := newWithSources(cfg, quietLog(), out, ok, bad, idle)
	// Run 300 ms and until the records checked below have come, not for a
	// fixed 300 ms that a loaded or emulated machine may spend starting up;
	// the stop is timed from the cancellation (2 s: far from the final
	// collection's 5 s).
	d := runAgentUntil(t, a, 300*time.Millisecond, "5 ticks and the self-metrics", func() bool {
		return out.count("tick") >= 5 && out.count("monagent_source") >= 3 && out.count("monagent") >= 1
	})
	if d > 2*time.Second {
		t.Fatalf("Run took %v to stop", d)
	}
	if !out.closed || !ok.close || !bad.close || !idle.close {
		t.Fatal("sink or sources not closed")
	}
	// Every record the ok source produced reached the sink.
	if got := out.count("tick"); got != ok.n || got < 5 {
		t.Fatalf("sink has %d tick records, source made %d", got, ok.n)
	}
	if out.count("monagent_source") < 3 || out.count("monagent") < 1 {
		t.Fatal("no self-metrics")
	}
	// The final self-metrics tell the truth about each source.
	var last = map[string]record.Record{}
	for _, r := range out.recs {
		if r.Measurement == "monagent_source" {
			last[r.Tag("source")] = r
		}
		if r.Tag("host") != "test-host" {
			t.Fatalf("record without host tag: %+v", r)
		}
	}
	check := func(src, field string, want uint64) {
		t.Helper()
		f, _ := last[src].Field(field)
		if f.U != want {
			t.Errorf("%s %s = %d, want %d", src, field, f.U, want)
		}
	}
	check("ok", "records", uint64(ok.n))
	check("bad", "errors", uint64(bad.n))
	check("idle", "no_data", uint64(idle.n))
	check("idle", "errors", 0)
	if f, _ := last["bad"].Field("last_error"); f.S != "sensor on fire" {
		t.Errorf("last_error %q", f.S)
	}
	// The source's own counter arrived through the snapshot, and it is the
	// count of the last collection (the final self-metrics follow it).
	if f, present := last["ok"].Field("collect_calls"); !present || f.I != int64(ok.n) {
		t.Errorf("collect_calls = %v (present %v), want %d", f.I, present, ok.n)
	}
}

// TestSelfMetricsRaceFree runs the self-metrics writer much faster than the
// sources collect, with sources whose counters are plain fields: under -race
// this fails if the writer reads what a collector writes.
func TestSelfMetricsRaceFree(t *testing.T) {
	cfg := Default()
	cfg.SelfMetrics.Interval = time.Millisecond
	srcs := []collect.Source{&countingSource{name: "a"}, &countingSource{name: "b", mode: "fail"}}
	out := &memSink{}
	a := newWithSources(cfg, quietLog(), out, srcs...)
	// 200 ms and 20 self-metrics records, however long a loaded machine
	// takes to write them (it was: at least 20 within 200 ms).
	runAgentUntil(t, a, 200*time.Millisecond, "20 self-metrics records", func() bool { return out.count("monagent_source") >= 20 })
}

// runAgentUntil runs a for at least least and until cond holds (polled for
// up to 30 s: a loaded or emulated machine gets there later, not to another
// answer), then cancels it and returns how long Run took to return after
// the cancellation.
func runAgentUntil(t *testing.T, a *Agent, least time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	start := time.Now()
	for deadline := start.Add(30 * time.Second); time.Since(start) < least || !cond(); time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-errc:
			t.Fatalf("Run returned before %s: %v", what, err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-errc
			t.Fatalf("no %s within 30 s", what)
		}
	}
	cancel()
	stopping := time.Now()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return time.Since(stopping)
}

// blockedSink never returns until released: the agent must not make sources wait.
type blockedSink struct {
	release chan struct{}
	memSink
}

func (b *blockedSink) Write(r []record.Record) error {
	<-b.release
	return b.memSink.Write(r)
}

func TestAgentCountsDropsInsteadOfBlocking(t *testing.T) {
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	src := &countingSource{name: "fast"}
	out := &blockedSink{release: make(chan struct{})}
	cfg.Memory.QueueBytes = 1 << 20
	a := newWithSources(cfg, quietLog(), out, src)
	// Fill the queue beyond its bound in bytes without a writer: each batch
	// is one record of one size, so exactly the batches beyond it drop.
	b := &collect.Batch{}
	b.Add("tick", 1, []record.Tag{{Key: "source", Value: "fast"}}, record.Int("n", 1))
	fit := int(cfg.Memory.QueueBytes / sink.BatchBytes(b.Records))
	for i := 0; i < fit+50; i++ {
		a.collect(context.Background(), a.sources[0])
	}
	if got := a.queue.Stats().DroppedBatches; got != 50 {
		t.Fatalf("dropped %d batches, want 50 (%d fit)", got, fit)
	}
	if got := a.queue.Stats().DroppedRecords; got != 50 {
		t.Fatalf("dropped %d records, want 50", got)
	}
	if n, bytes := a.queue.State(); n != fit || bytes > cfg.Memory.QueueBytes {
		t.Fatalf("%d batches, %d bytes queued; want %d within %d", n, bytes, fit, cfg.Memory.QueueBytes)
	}
	close(out.release)
}

// records_out counts the records handed to the outputs, and each output
// counts what it kept: a spool refusing a batch (its buffer full) does not
// make records_out 0 while stdout or a file wrote them (it did before), and
// the refusal is in output_errors and the spool's own drop counters.
func TestRecordsOutCountsPerOutput(t *testing.T) {
	cfg := Default()
	cfg.Spool.Dir = t.TempDir()
	cfg.Output.File = filepath.Join(t.TempDir(), "out.lp")
	out, err := OpenOutputs(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := newWithSources(cfg, quietLog(), out.Sink)
	a.outputs = out
	rec := []record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", 1)}, TimeNS: 1}}
	a.write(rec)
	out.Spool.Close() // the spool refuses from now on
	a.write(rec)
	if err := out.Optional[0].Close(); err != nil {
		t.Fatal(err)
	}
	if a.written.Load() != 2 || a.writeErrors.Load() != 1 {
		t.Fatalf("records_out %d, output_errors %d; want 2 and 1", a.written.Load(), a.writeErrors.Load())
	}
	if st := out.Spool.Stats(); st.Appended != 1 {
		t.Fatalf("spool appended %d, want 1", st.Appended)
	}
	if st := out.Optional[0].Stats(); st.Written != 2 {
		t.Fatalf("file output wrote %d, want 2", st.Written)
	}
}
