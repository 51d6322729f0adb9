package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// busySource takes about its interval to collect, so that a tick is always
// waiting when the agent is cancelled; it counts collections started after.
type busySource struct {
	late *atomic.Int64
}

func (busySource) Name() string            { return "busy" }
func (busySource) Interval() time.Duration { return time.Millisecond }
func (busySource) Close() error            { return nil }
func (s busySource) Collect(ctx context.Context, b *Batch) error {
	if ctx.Err() != nil {
		s.late.Add(1)
	}
	time.Sleep(2 * time.Millisecond)
	return nil
}

// No collection starts once the agent is cancelled, although a tick is
// ready at that moment (a select with both ready picks either: before, about
// half of these sources collected once more).
func TestNoCollectionAfterCancellation(t *testing.T) {
	var late atomic.Int64
	var srcs []Source
	for range 40 {
		srcs = append(srcs, busySource{late: &late})
	}
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	for round := range 5 {
		a := newWithSources(cfg, quietLog(), &memSink{}, srcs...)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		if err := a.Run(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if n := late.Load(); n != 0 {
			t.Fatalf("round %d: %d collections started after cancellation", round, n)
		}
	}
}
