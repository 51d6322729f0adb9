package agent

import (
	"context"
	"testing"

	"github.com/monagent/monagent/collect/collecttest"
)

// While the outputs are behind (the queue holds more than a quarter of
// its bound), an event source's collection is put off and counted, its
// events left in its ring, until the ring is half full; polled sources
// still collect; at the stop (the queue draining) nothing is put off; and
// every event becomes a record once collected.
func TestEventSourcesWaitWhileTheOutputsAreBehind(t *testing.T) {
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	cfg.Memory.QueueBytes = 1 << 20
	polled := &countingSource{name: "polled"}
	ticks := collecttest.NewTickSource(t, &collecttest.ScriptedProducer{}, 1024)
	a := newWithSources(cfg, quietLog(), &memSink{}, polled, ticks)
	rp, rt := a.sources[0], a.sources[1]
	ctx := context.Background()
	collected := func() uint64 { f, _ := collecttest.Field(rt.Fields(), "records"); return f.U }
	deferred := func() uint64 { f, _ := collecttest.Field(rt.Fields(), "deferred"); return f.U }

	// Not behind: collected at once.
	ticks.Queue().Put(collecttest.Ticks(0, 10))
	a.collect(ctx, rt)
	if collected() != 10 || deferred() != 0 {
		t.Fatalf("queue empty: %d records, %d deferred; want 10 and 0", collected(), deferred())
	}
	// Behind: the polled source's batches take the queue past a quarter.
	for _, bytes := a.queue.State(); bytes <= cfg.Memory.QueueBytes/4; _, bytes = a.queue.State() {
		a.collect(ctx, rp)
	}
	ticks.Queue().Put(collecttest.Ticks(10, 500))
	a.collect(ctx, rt)
	if w, c := ticks.Backlog(); collected() != 10 || deferred() != 1 || w != 500 || c != 1024 {
		t.Fatalf("behind, ring at 500 of 1024: %d records, %d deferred, backlog %d of %d; want 10, 1, 500 of 1024", collected(), deferred(), w, c)
	}
	// Half full: collected although behind.
	ticks.Queue().Put(collecttest.Ticks(510, 12))
	a.collect(ctx, rt)
	if w, _ := ticks.Backlog(); collected() != 522 || deferred() != 1 || w != 0 {
		t.Fatalf("behind, ring at 512 of 1024: %d records, %d deferred, %d waiting; want 522, 1, 0", collected(), deferred(), w)
	}
	// At the stop nothing waits.
	ticks.Queue().Put(collecttest.Ticks(522, 3))
	a.queue.Drain()
	a.collect(ctx, rt)
	if collected() != 525 || deferred() != 1 || ticks.Queue().RingDropped() != 0 {
		t.Fatalf("draining: %d records, %d deferred, %d ring drops; want 525, 1, 0", collected(), deferred(), ticks.Queue().RingDropped())
	}
}
