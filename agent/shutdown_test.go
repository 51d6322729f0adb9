package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
)

// busySource takes about its interval to collect, so that a tick is always
// waiting when the agent is cancelled. It counts the collections started
// although the context was already done when its previous one returned: the
// agent saw that and must not collect again (a collection that started just
// before the cancellation is no fault).
type busySource struct {
	late       *atomic.Int64
	doneAtExit bool // the context was done when the last Collect returned
}

func (*busySource) Name() string            { return "busy" }
func (*busySource) Interval() time.Duration { return time.Millisecond }
func (*busySource) Close() error            { return nil }
func (s *busySource) Collect(ctx context.Context, b *collect.Batch) error {
	if s.doneAtExit {
		s.late.Add(1)
	}
	time.Sleep(2 * time.Millisecond)
	s.doneAtExit = ctx.Err() != nil
	return nil
}

// No collection starts once the agent is cancelled, although a tick is
// ready at that moment (a select with both ready picks either: before, about
// half of these sources collected once more).
func TestNoCollectionAfterCancellation(t *testing.T) {
	var late atomic.Int64
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	for round := range 5 {
		var srcs []collect.Source
		for range 40 {
			srcs = append(srcs, &busySource{late: &late})
		}
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
