package judging

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
)

// TestJudgeSleepsUntilDue (issue 37): with one reference a clock, the
// judge does not wake at a fixed 200 ms: between samples it sleeps until a
// transition is due or judgeIdle passes; a holdover shorter than judgeIdle
// still ends on its own, dated exactly, without a sample.
func TestJudgeSleepsUntilDue(t *testing.T) {
	g := &Judges{log: slog.New(slog.DiscardHandler)}
	const holdover = 300 * time.Millisecond
	m, err := g.Add("system", "ntp:test", Config{Enabled: true, Threshold: time.Millisecond, Holdover: holdover, MinSamples: 1}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []record.Record
	enqueue := func(r []record.Record) { mu.Lock(); got = append(got, r...); mu.Unlock() }
	b := &collect.Batch{}
	now := g.set.Time().Now()
	m.Observe(b, judge.Sample{TimeNS: now.RealNS, MonoNS: now.MonoNS, Synced: true, OffsetNS: 100, BoundNS: 200})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Serve(ctx, nil, "h", enqueue); close(done) }()
	defer func() { cancel(); <-done }()

	const idle = 1500 * time.Millisecond
	time.Sleep(idle)
	if n := g.ticks.Load(); n > 3 {
		t.Fatalf("the judge woke %d times in %v with nothing due (every %v)", n, idle, Tick)
	} else {
		t.Logf("%d wake-ups in %v LOCKED (a fixed %v tick: %d)", n, idle, Tick, idle/Tick)
	}
	lost := g.set.Time().Now()
	m.Missed(b, lost.RealNS)
	deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine
	var free *record.Record
	for free == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		for i := range got {
			if got[i].Measurement == "sync_state" && field(got[i], "to") == "FREERUN" {
				free = &got[i]
			}
		}
		mu.Unlock()
	}
	if free == nil {
		t.Fatalf("no FREERUN %v after the holdover began (records %v)", 10*time.Second, got)
	}
	if want := lost.RealNS + int64(holdover); free.TimeNS < want || free.TimeNS > want+int64(time.Millisecond) {
		t.Fatalf("FREERUN dated %d, want the holdover's end %d", free.TimeNS, want)
	}
}
