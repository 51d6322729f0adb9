package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink"
	"github.com/monagent/monagent/sink/spool"
)

// Issue 10 item 18: the run summary names InfluxDB only when it is configured;
// with it, it says what InfluxDB acknowledged and the shipper's state.
func TestSummaryMentionsInfluxOnlyWhenConfigured(t *testing.T) {
	for _, withInflux := range []bool{false, true} {
		cfg := Default()
		cfg.Spool.Enabled = true
		cfg.Spool.Dir = t.TempDir()
		cfg.Influx.Enabled = withInflux
		cfg.Influx.URL = "http://127.0.0.1:1"
		cfg.Influx.Bucket = "db/autogen"
		cfg.Influx.TokenEnv = ""
		o, err := OpenOutputs(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		o.Spool.Append([]record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", 1)}, TimeNS: 1}})
		text := strings.Join(o.Summary(), "\n")
		o.Close()
		mentions := strings.Contains(text, "InfluxDB") || strings.Contains(text, "dead-letter")
		if mentions != withInflux {
			t.Fatalf("influx configured %v, summary:\n%s", withInflux, text)
		}
		if withInflux && (!strings.Contains(text, "acknowledged by InfluxDB") || !strings.Contains(text, "state ok")) {
			t.Fatalf("summary with InfluxDB:\n%s", text)
		}
		if !withInflux && !strings.Contains(text, "1 points appended, 0 dropped") {
			t.Fatalf("summary without InfluxDB:\n%s", text)
		}
	}
}

// syncBuffer is a bytes.Buffer for a logger written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The agent hands its logger to the shipper: an unreachable InfluxDB is
// named once in the agent's log, not retried in silence.
func TestAgentLogsAnUnreachableInfluxOnce(t *testing.T) {
	cfg := Default()
	cfg.Clock.Interval = 50 * time.Millisecond
	cfg.PHC.Enabled, cfg.Sensors.Enabled = false, false
	cfg.Spool.Dir = t.TempDir()
	cfg.Influx.Enabled = true
	cfg.Influx.URL = "http://127.0.0.1:1" // nothing listens on port 1
	cfg.Influx.Bucket = "db/autogen"
	cfg.Influx.TokenEnv = ""
	cfg.Influx.BatchInterval = 50 * time.Millisecond // the first attempt comes early in the run
	var logs syncBuffer
	cfg.HTTP.Listen = "127.0.0.1:0"
	a, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// 1.5 s and until the shipper has failed 3 times (its retries back off
	// from 100 ms to 1 s), not a fixed 1.5 s that a loaded machine may spend
	// before the first attempt: however many attempts, one line.
	runAgentUntil(t, a, 1500*time.Millisecond, "3 failed attempts to reach InfluxDB", func() bool { return a.Outputs().Shipper.Stats().Retries >= 3 })
	if n := strings.Count(logs.String(), "InfluxDB unreachable at http://127.0.0.1:1"); n != 1 {
		t.Fatalf("%d log lines name the unreachable InfluxDB, want 1:\n%s", n, logs.String())
	}
}

// Building the agent leaves no goroutine running (its outputs' included): everything
// runs under Run and has stopped when Run returns.
func TestBuildingTheAgentStartsNothing(t *testing.T) {
	cfg := Default()
	cfg.PHC.Enabled, cfg.Sensors.Enabled = false, false
	cfg.Clock.Interval = 20 * time.Millisecond
	cfg.Spool.Dir = t.TempDir()
	cfg.HTTP.Listen = "127.0.0.1:0"
	before := goroutines()
	a, err := New(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	// None left running: registering the /metrics collectors runs each
	// one's Describe on a goroutine of its own that ends at once
	// (prometheus.Registry.Register), hence the wait.
	noneStartedHere(t, before, time.Second, "New left running")
	// 200 ms and until something reached the spool (it was: within 200 ms).
	runAgentUntil(t, a, 200*time.Millisecond, "a record in the spool", func() bool { return a.Outputs().Spool.Stats().Appended > 0 })
	noneStartedHere(t, before, 2*time.Second, "outliving Run")
}

// TestAgentFlushesTheSpoolWhenIdle (issue 37): once the writer has handed
// out what was queued, the spool writes it then, not FlushInterval later
// (here an hour).
func TestAgentFlushesTheSpoolWhenIdle(t *testing.T) {
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: time.Hour, FsyncInterval: time.Hour, IdleFlush: true}) // as OpenOutputs opens it
	if err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	a := newWithSources(cfg, quietLog(), sink.NewFanout(sp), &countingSource{name: "a", mode: "ok"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	r := sp.NewReader()
	defer r.Close()
	wait, stop := context.WithTimeout(ctx, 10*time.Second) // generous: a loaded machine
	e, err := r.Next(wait)
	stop()
	got := e.Points
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if got == 0 {
		t.Fatal("nothing written to the spool while the agent ran: it waited for flush_interval")
	}
}
