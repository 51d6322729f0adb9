package collect

import (
	"context"
	"time"

	"github.com/monagent/monagent/timebase"
)

// DefaultPace is a Pacer's longest wait unless it sets its own: 50 reads a
// second at most, whatever the event rate, and an edge reaches its ring at
// most 20 ms after its read could have taken it (its record's time is its
// kernel stamp, whenever it is read).
const DefaultPace = 20 * time.Millisecond

// Pacer spaces a producer's reads so that each takes a batch from the
// kernel's queue rather than one event: after a read that emptied the
// queue, the producer waits before it blocks on the queue again. A wake-up
// (the poll, the read, the scheduler's hand-offs) costs a single-core board
// far more than an event's decoding, so at 1 kHz a reader that woke per
// event would spend most of its CPU waking.
//
// The wait is never longer than Max, nor longer than the kernel's queue
// (Capacity events) takes to fill half way at the rate the last read saw:
// a queue that holds 1,024 edges waits at most 51 ms at 10 kHz, and not at
// all while reads come back full. A burst from idle fills at most Max of it
// before the next read. Events too rare for a wait to gather two more (a
// PPS, a button) are read as they come, as is the first read. What the
// kernel still drops is counted where it always is (its sequence numbers,
// its overflow counts).
//
// A Pacer is one producer's: not safe for concurrent use.
type Pacer struct {
	Capacity int           // events the kernel's queue holds
	Max      time.Duration // the longest wait (0: DefaultPace)

	last  time.Time // when the previous read returned
	timer *time.Timer
	waits uint64
}

// After is the wait after a read of n events that returned at now; drained
// says the read emptied the kernel's queue (it took fewer than it asked
// for). It is 0 for a read that did not drain the queue, or took nothing.
func (p *Pacer) After(n int, drained bool, now time.Time) time.Duration {
	prev := p.last
	p.last = now
	if n <= 0 || !drained || p.Capacity <= 1 {
		return 0
	}
	limit := p.Max
	if limit <= 0 {
		limit = DefaultPace
	}
	elapsed := int64(now.Sub(prev))
	if prev.IsZero() || elapsed <= 0 {
		return 0 // no rate yet
	}
	// The queue fills half way in (Capacity/2) / (n / elapsed).
	wait := min(int64(limit), elapsed*int64(p.Capacity/2)/int64(n))
	// A wait that would gather fewer than two events more only delays them.
	if int64(n)*wait/elapsed < 2 {
		return 0
	}
	return time.Duration(wait)
}

// Pause is After, then the wait it gives (cut short when ctx is done). It
// does not allocate after its first wait. The next read's rate counts the
// wait in: its events arrived during it.
func (p *Pacer) Pause(ctx context.Context, n int, drained bool) {
	now := time.Now()
	d := p.After(n, drained, now)
	if d <= 0 || ctx.Err() != nil {
		return
	}
	p.waits++
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		p.timer.Stop()
	case <-p.timer.C:
	}
}

// Waits is how many times the producer waited.
func (p *Pacer) Waits() uint64 { return p.waits }

// UntilBoundary is how long until the next multiple of iv on
// CLOCK_MONOTONIC (iv itself if the clock cannot be read): the agent's
// sources of one interval, and its judge's idle wake-up, wake on these
// boundaries together, so that a board wakes once a second for all of
// them and not once for each. The phase is the boot's, so hosts still poll
// a server at phases of their own.
func UntilBoundary(iv time.Duration) time.Duration {
	now, err := timebase.Monotonic.Now()
	if err != nil || iv <= 0 {
		return iv
	}
	return iv - time.Duration(now%int64(iv))
}
