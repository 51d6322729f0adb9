package collect

import (
	"context"
	"testing"
	"time"
)

// The wait after a read: none unless it drained the queue; at most Max;
// no longer than half the queue takes to fill at the rate the read saw.
func TestPacerAfter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name    string
		p       Pacer
		n       int
		drained bool
		gap     time.Duration // since the previous read (0: none before)
		want    time.Duration
	}{
		{"first read: no rate yet", Pacer{Capacity: 1024}, 10, true, 0, 0},
		{"not drained: the queue holds more", Pacer{Capacity: 1024}, 1024, false, time.Millisecond, 0},
		{"nothing read", Pacer{Capacity: 1024}, 0, true, time.Millisecond, 0},
		{"slow events: Max", Pacer{Capacity: 1024}, 10, true, 10 * time.Millisecond, DefaultPace},
		{"own Max", Pacer{Capacity: 1024, Max: 5 * time.Millisecond}, 1000, true, time.Second, 5 * time.Millisecond},
		{"rare events: no wait", Pacer{Capacity: 1024}, 1, true, time.Second, 0},
		{"a wait that gathers two more", Pacer{Capacity: 1024}, 1, true, 10 * time.Millisecond, DefaultPace},
		{"one that would not", Pacer{Capacity: 1024}, 1, true, 11 * time.Millisecond, 0},
		// 100 events in 10 ms: 10 kHz; 512 events take 51.2 ms.
		{"10 kHz, 1024 queue", Pacer{Capacity: 1024, Max: time.Second}, 100, true, 10 * time.Millisecond, 51200 * time.Microsecond},
		// 64 events in 1 ms: 64 kHz; a 128 buffer half fills in 1 ms.
		{"64 kHz, 128 buffer", Pacer{Capacity: 128}, 64, true, time.Millisecond, time.Millisecond},
		{"a queue of one never waits", Pacer{Capacity: 1}, 1, true, time.Second, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			if c.gap > 0 {
				p.After(1, false, t0.Add(-c.gap))
			}
			if got := p.After(c.n, c.drained, t0); got != c.want {
				t.Errorf("After(%d, %v) %v after the last read = %v, want %v", c.n, c.drained, c.gap, got, c.want)
			}
		})
	}
}

// A rate that rises between reads shortens the next wait, within one read.
func TestPacerFollowsTheRate(t *testing.T) {
	p := Pacer{Capacity: 1000, Max: time.Second}
	at := time.Unix(0, 0)
	p.After(1, true, at)
	at = at.Add(100 * time.Millisecond)
	slow := p.After(10, true, at) // 100/s: 5 s to half fill, capped
	at = at.Add(100 * time.Millisecond)
	fast := p.After(1000, true, at) // 10 kHz: 50 ms
	if slow != time.Second || fast != 50*time.Millisecond {
		t.Fatalf("waits %v then %v, want 1s then 50ms", slow, fast)
	}
}

// Pause waits, returns at once when ctx is done, and does not allocate
// after its first wait.
func TestPacerPause(t *testing.T) {
	// 100 events a read, a read a millisecond: 100 kHz.
	p := Pacer{Capacity: 1024, Max: time.Millisecond}
	ctx := context.Background()
	p.After(0, false, time.Now().Add(-time.Millisecond))
	start := time.Now()
	p.Pause(ctx, 100, true)
	if d := time.Since(start); d < time.Millisecond {
		t.Fatalf("paused %v, want at least 1ms", d)
	}
	if a := testing.AllocsPerRun(20, func() { p.Pause(ctx, 100, true) }); a != 0 {
		t.Errorf("%.1f allocations per pause", a)
	}
	if p.Waits() != 22 {
		t.Errorf("%d waits, want 22", p.Waits())
	}
	cancelled, cancel := context.WithCancel(ctx)
	long := Pacer{Capacity: 1 << 30, Max: time.Hour}
	long.After(0, false, time.Now().Add(-time.Millisecond))
	done := make(chan struct{})
	go func() { long.Pause(cancelled, 100, true); close(done) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Pause did not return when its context was done")
	}
}
