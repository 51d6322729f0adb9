package collect

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/ring"
)

// Runner is a source with a reader of its own. The agent calls Run under its
// context before the first collection, and waits for it to return
// (when that context is done) before it closes the source. Nothing a source
// builds runs before Agent.Run, and nothing outlives it.
type Runner interface {
	Run(ctx context.Context)
}

// Producer is the part of an event source that knows its kernel object or
// socket: Produce blocks on it, stamps each event (or keeps the kernel's stamp)
// and puts it into q, until ctx is done (then it returns nil, promptly) or the
// object fails (then it returns the error; the event source counts it, backs
// off and calls Produce again). A producer adds only its decoder: the queue
// counts what the ring cannot take, and Lost counts what the kernel says it lost.
type Producer[E any] interface {
	Produce(ctx context.Context, q *EventQueue[E]) error
}

// ProducerFunc is a Producer made of a function.
type ProducerFunc[E any] func(ctx context.Context, q *EventQueue[E]) error

// Produce implements Producer.
func (f ProducerFunc[E]) Produce(ctx context.Context, q *EventQueue[E]) error { return f(ctx, q) }

// EventQueue is the producer's side of an event source: a lock-free ring
// between the reader goroutine and the collection, with exact counts. For any
// run, Received = events collected + RingDropped + events still waiting, and
// Received + KernelLost = the events the kernel saw.
type EventQueue[E any] struct {
	ring     *ring.Ring[E]
	received atomic.Uint64
	lost     atomic.Uint64
}

// Put queues events (one producer only) and returns how many the ring took;
// the rest are counted as ring drops. It does not allocate.
func (q *EventQueue[E]) Put(evs []E) int {
	n := q.ring.PutBatch(evs)
	// Counted after the ring has them: whoever sees Received grow finds the
	// events in the ring (or among its drops).
	q.received.Add(uint64(len(evs)))
	return n
}

// Put1 queues one event; false (and counted) when the ring is full.
func (q *EventQueue[E]) Put1(e E) bool {
	ok := q.ring.Put(e)
	q.received.Add(1)
	return ok
}

// Lost counts n events the kernel (or the peer) reports as lost before they
// reached the producer: sequence-number gaps, queue overflows.
func (q *EventQueue[E]) Lost(n uint64) { q.lost.Add(n) }

// Received is how many events the producer read.
func (q *EventQueue[E]) Received() uint64 { return q.received.Load() }

// KernelLost is how many events the kernel reported lost.
func (q *EventQueue[E]) KernelLost() uint64 { return q.lost.Load() }

// RingDropped is how many read events the ring could not hold.
func (q *EventQueue[E]) RingDropped() uint64 { return q.ring.Dropped() }

// Get takes up to len(out) waiting events, oldest first (the collection's
// side: one consumer only), and returns how many.
func (q *EventQueue[E]) Get(out []E) int { return q.ring.Get(out) }

// Waiting is how many events wait for the next collection.
func (q *EventQueue[E]) Waiting() int { return q.ring.Len() }

// EventSourceConfig describes an event source.
type EventSourceConfig[E any] struct {
	Name     string
	Interval time.Duration // how often the queue is shipped (default 1 s)
	Ring     int           // events between reader and shipper, a power of two (default 4096)
	Producer Producer[E]
	// Emit appends the records of one event. It runs on the collection
	// goroutine; the record's time is the event's own.
	Emit func(b *Batch, e *E)
	// After runs once per collection after the events (e.g. a stats record);
	// optional.
	After func(b *Batch, events int) error
	// Close releases what the producer holds; it runs after Run returned.
	Close func() error
	// Self adds the decoder's own self-metrics fields; optional.
	Self func() []record.Field
	// MaxBackoff caps the wait before a failed producer runs again (default 5 s).
	MaxBackoff time.Duration
}

// EventSource is the one pattern every event source follows (GPIO edges,
// PPS, PHC external timestamps, IIO buffers, the PTP probe, application
// markers): a reader goroutine (Run, under the agent's context) blocks on a
// kernel object or socket and puts stamped events into a ring; each collection
// drains the ring and emits one or more records per event at the event's own
// time. Every loss is counted: kernel-reported losses, ring overflows and
// producer failures are self-metrics.
type EventSource[E any] struct {
	cfg EventSourceConfig[E]
	q   EventQueue[E]
	out []E

	runs       atomic.Uint64 // Produce calls (1 + restarts)
	readErrors atomic.Uint64
	lastErr    atomic.Pointer[error]
	collected  atomic.Uint64
}

// NewEventSource returns an event source; nothing runs until Run.
func NewEventSource[E any](cfg EventSourceConfig[E]) (*EventSource[E], error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Ring == 0 {
		cfg.Ring = 4096
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.Producer == nil || cfg.Emit == nil {
		return nil, fmt.Errorf("event source %s: a producer and an emitter are required", cfg.Name)
	}
	r, err := ring.New[E](cfg.Ring)
	if err != nil {
		return nil, fmt.Errorf("event source %s: %w", cfg.Name, err)
	}
	return &EventSource[E]{cfg: cfg, q: EventQueue[E]{ring: r}, out: make([]E, min(256, cfg.Ring))}, nil
}

// Decoder is what one event source adds to the pattern: its producer, the
// records of one event (Emit) and its own self-metrics fields (Self). A
// decoder with a method After(b *Batch, events int) error has it run once per
// collection after the events; one with Close() error is closed after Run.
type Decoder[E any] interface {
	Producer[E]
	Emit(b *Batch, e *E)
	Self() []record.Field
}

// Decode returns the event source of d; nothing runs until Run.
func Decode[E any](name string, interval time.Duration, ring int, d Decoder[E]) (*EventSource[E], error) {
	cfg := EventSourceConfig[E]{Name: name, Interval: interval, Ring: ring, Producer: d, Emit: d.Emit, Self: d.Self}
	if a, ok := d.(interface {
		After(b *Batch, events int) error
	}); ok {
		cfg.After = a.After
	}
	if c, ok := d.(interface{ Close() error }); ok {
		cfg.Close = c.Close
	}
	return NewEventSource(cfg)
}

// SetMaxBackoff caps the wait before a failed producer runs again, for a
// device known to recover at once (a replayed capture).
func (s *EventSource[E]) SetMaxBackoff(d time.Duration) { s.cfg.MaxBackoff = d }

// Queue is the source's queue (for tests and stats).
func (s *EventSource[E]) Queue() *EventQueue[E] { return &s.q }

// Name implements Source.
func (s *EventSource[E]) Name() string { return s.cfg.Name }

// Interval implements Source.
func (s *EventSource[E]) Interval() time.Duration { return s.cfg.Interval }

// Run implements Runner: it runs the producer until ctx is done, running it
// again after a back-off whenever it fails.
func (s *EventSource[E]) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		s.runs.Add(1)
		start := time.Now()
		err := s.cfg.Producer.Produce(ctx, &s.q)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("producer returned before the agent stopped")
		}
		s.readErrors.Add(1)
		err = fmt.Errorf("%s: %w", s.cfg.Name, err)
		s.lastErr.Store(&err)
		if time.Since(start) > 10*backoff { // it ran a while: start the back-off over
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

// Collect implements Source: it emits every event waiting in the ring, then
// the After record. It returns the producer's last failure since the previous
// collection (with the records it did emit), or ErrNoData when nothing came.
func (s *EventSource[E]) Collect(ctx context.Context, b *Batch) error {
	total := 0
	for {
		n := s.q.Get(s.out)
		for i := range s.out[:n] {
			s.cfg.Emit(b, &s.out[i])
		}
		total += n
		if n < len(s.out) {
			break
		}
	}
	s.collected.Add(uint64(total))
	var errs []error
	if s.cfg.After != nil {
		if err := s.cfg.After(b, total); err != nil && !errors.Is(err, ErrNoData) {
			errs = append(errs, err)
		}
	}
	if p := s.lastErr.Swap(nil); p != nil {
		errs = append(errs, *p)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if total == 0 {
		return fmt.Errorf("%s: no event this interval: %w", s.cfg.Name, ErrNoData)
	}
	return nil
}

// Backlog implements Backlogged: the events in the ring, and its size.
func (s *EventSource[E]) Backlog() (waiting, capacity int) { return s.q.Waiting(), s.q.ring.Cap() }

// RingDropped is how many read events the ring could not hold.
func (s *EventSource[E]) RingDropped() uint64 { return s.q.RingDropped() }

// Close implements Source.
func (s *EventSource[E]) Close() error {
	if s.cfg.Close != nil {
		return s.cfg.Close()
	}
	return nil
}

// SelfFields implements SelfReporter: the queue's exact counts, then the
// decoder's own.
func (s *EventSource[E]) SelfFields() []record.Field {
	f := []record.Field{
		record.Uint("events", s.q.Received()),
		record.Uint("events_collected", s.collected.Load()),
		record.Uint("kernel_lost", s.q.KernelLost()),
		record.Uint("ring_dropped", s.q.RingDropped()),
		record.Int("ring_waiting", int64(s.q.Waiting())),
		record.Uint("read_errors", s.readErrors.Load()),
		record.Uint("reader_restarts", max(s.runs.Load(), 1)-1),
	}
	if s.cfg.Self != nil {
		f = append(f, s.cfg.Self()...)
	}
	return f
}
