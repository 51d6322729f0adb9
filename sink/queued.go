package sink

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
)

// ErrQueueFull is returned by Queued.Write when the batch would take the
// bytes waiting for the writer beyond the queue's bound; its records are
// dropped and counted.
var ErrQueueFull = errors.New("output queue full: records dropped")

// QueuedStats are a queued sink's counters, in records unless named bytes.
// Every record handed to Write is, once the sink is closed, exactly one of
// Written, Rejected, DroppedFull, DroppedError or DroppedClose.
type QueuedStats struct {
	Written      uint64 // records the writer took
	Bytes        uint64 // bytes the writer took
	Rejected     uint64 // records that could not be encoded
	DroppedFull  uint64 // records dropped because the queue was full (the writer is slow or stalled)
	DroppedError uint64 // records in writes that failed
	DroppedClose uint64 // records still waiting when Close gave up on the writer
	WriteErrors  uint64 // failed writes
	QueuedBytes  int64  // bytes waiting now
	LastError    string // the latest write failure, "" once a write succeeds
}

// Queued is a sink that never waits for its writer: Write encodes the batch
// and queues the bytes for a goroutine of its own that writes them; a batch
// that would take the waiting bytes beyond the bound is dropped and counted.
// It is for optional outputs (stdout, a file, a FIFO) that must never hold up
// the durable spool or grow memory when their reader is slow or gone.
//
// The goroutine starts with the first Write, so a sink that was built but
// never written starts nothing; it opens the destination itself, so that a
// FIFO whose reader has not come yet holds up nobody.
type Queued struct {
	name     string
	open     func() (io.WriteCloser, error)
	w        io.WriteCloser // the writer goroutine's (and Close's, once it is done or abandoned)
	maxBytes int

	mu       sync.Mutex
	enc      record.Encoder
	queue    []chunk
	queued   int // bytes in queue
	inflight int // records the writer holds now
	free     [][]byte
	closed   bool
	started  bool
	gaveUp   bool // Close stopped waiting for the writer
	wake     chan struct{}
	done     chan struct{}

	written, bytes, rejected            atomic.Uint64
	droppedFull, droppedErr, droppedEnd atomic.Uint64
	writeErrors                         atomic.Uint64
	lastErr                             atomic.Pointer[string]
}

type chunk struct {
	b    []byte
	recs int
}

// NewQueued returns a queued sink with at most maxBytes of encoded records
// waiting, writing to what open returns (called on the writer goroutine, again
// after a failure); name appears in errors.
func NewQueued(name string, open func() (io.WriteCloser, error), maxBytes int) *Queued {
	return &Queued{name: name, open: open, maxBytes: maxBytes, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Name is where the sink writes.
func (q *Queued) Name() string { return q.name }

// Write implements Sink. It never waits for the writer.
func (q *Queued) Write(recs []record.Record) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.droppedEnd.Add(uint64(len(recs)))
		return fmt.Errorf("%s: %w", q.name, ErrClosed)
	}
	var b []byte
	if n := len(q.free); n > 0 {
		b, q.free = q.free[n-1][:0], q.free[:n-1]
	}
	b, rejected, encErr := q.enc.Append(b, recs)
	kept := len(recs) - rejected
	q.rejected.Add(uint64(rejected))
	if waiting := q.queued; waiting+len(b) > q.maxBytes {
		q.recycle(b)
		q.mu.Unlock()
		q.droppedFull.Add(uint64(kept))
		return fmt.Errorf("%s: %w (%d records, %d bytes waiting)", q.name, ErrQueueFull, kept, waiting)
	}
	if kept > 0 {
		q.queue = append(q.queue, chunk{b: b, recs: kept})
		q.queued += len(b)
	}
	if !q.started {
		q.started = true
		go q.run()
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	if encErr != nil {
		return fmt.Errorf("%s: %w", q.name, encErr)
	}
	return nil
}

// ErrClosed is returned by a closed sink's Write.
var ErrClosed = errors.New("sink closed")

// maxFree is how many buffers are kept for reuse; a buffer larger than an
// eighth of the bound is not kept, so that the spare buffers never hold more
// than the bound itself.
const maxFree = 8

// recycle keeps b for a later Write (q.mu held).
func (q *Queued) recycle(b []byte) {
	if len(q.free) < maxFree && cap(b) <= q.maxBytes/maxFree {
		q.free = append(q.free, b)
	}
}

// run writes what is queued until Close.
func (q *Queued) run() {
	defer close(q.done)
	var batch []chunk
	for {
		q.mu.Lock()
		for _, c := range batch {
			q.recycle(c.b)
		}
		batch = append(batch[:0], q.queue...)
		clear(q.queue)
		q.queue = q.queue[:0]
		q.queued = 0
		q.inflight = 0
		for _, c := range batch {
			q.inflight += c.recs
		}
		closed, gaveUp := q.closed, q.gaveUp
		q.mu.Unlock()
		if gaveUp {
			return
		}
		if len(batch) == 0 {
			if closed {
				return
			}
			<-q.wake
			continue
		}
		for _, c := range batch {
			q.writeChunk(c)
		}
	}
}

func (q *Queued) writeChunk(c chunk) {
	var n int
	var err error
	if q.w == nil {
		q.w, err = q.open()
	}
	if err == nil {
		if n, err = q.w.Write(c.b); err != nil {
			q.w.Close() // open again for the next chunk
			q.w = nil
		}
	}
	q.mu.Lock()
	gaveUp := q.gaveUp
	q.inflight -= c.recs
	q.mu.Unlock()
	if gaveUp {
		return // Close counted these already
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %v", q.name, err)
		q.lastErr.Store(&msg) // before the counts: whoever sees them sees it
		q.droppedErr.Add(uint64(c.recs))
		q.writeErrors.Add(1)
		return
	}
	q.written.Add(uint64(c.recs))
	q.bytes.Add(uint64(n))
	q.lastErr.Store(nil)
}

// Stats returns the counters.
func (q *Queued) Stats() QueuedStats {
	q.mu.Lock()
	queued := int64(q.queued)
	q.mu.Unlock()
	var last string
	if p := q.lastErr.Load(); p != nil {
		last = *p
	}
	return QueuedStats{
		Written: q.written.Load(), Bytes: q.bytes.Load(), Rejected: q.rejected.Load(),
		DroppedFull: q.droppedFull.Load(), DroppedError: q.droppedErr.Load(), DroppedClose: q.droppedEnd.Load(),
		WriteErrors: q.writeErrors.Load(), QueuedBytes: queued, LastError: last,
	}
}

// Fields are the counters as the fields of a monagent_output record
// (docs/schema.md).
func (st QueuedStats) Fields() []record.Field {
	return []record.Field{
		record.Uint("written", st.Written), record.Uint("bytes", st.Bytes), record.Uint("rejected", st.Rejected),
		record.Uint("dropped_full", st.DroppedFull), record.Uint("dropped_error", st.DroppedError), record.Uint("dropped_close", st.DroppedClose),
		record.Uint("write_errors", st.WriteErrors), record.Int("queued_bytes", st.QueuedBytes), record.String("last_error", st.LastError),
	}
}

// Summary says what the sink wrote and what it did not, for the end of a
// run.
func (q *Queued) Summary() string {
	st := q.Stats()
	line := fmt.Sprintf("wrote %d records (%d bytes) to %s", st.Written, st.Bytes, q.name)
	if lost := st.DroppedFull + st.DroppedError + st.DroppedClose; lost > 0 {
		line += fmt.Sprintf("; %d not written (queue full %d, write errors %d, at close %d)", lost, st.DroppedFull, st.DroppedError, st.DroppedClose)
	}
	return line
}

// CloseGrace is how long Close waits for the writer to write what is queued.
const CloseGrace = time.Second

// Close implements Sink: it waits up to CloseGrace for the writer to write
// what is queued, then closes the destination. Records still waiting then
// (a reader that stopped reading) are counted in DroppedClose; a writer blocked for good in a write or an open that cannot be
// interrupted (a blocking stdout, a FIFO nobody opened) is left behind, and
// what it writes after counts no more.
func (q *Queued) Close() error {
	return q.CloseWithin(CloseGrace)
}

// CloseWithin is Close with its own grace.
func (q *Queued) CloseWithin(grace time.Duration) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	started := q.started
	q.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-q.done:
		if q.w != nil {
			return q.w.Close()
		}
		return nil
	case <-t.C:
	}
	q.mu.Lock()
	q.gaveUp = true
	left := q.inflight
	for _, c := range q.queue {
		left += c.recs
	}
	q.queue, q.queued, q.inflight = nil, 0, 0
	q.mu.Unlock()
	q.droppedEnd.Add(uint64(left))
	return nil // counted (DroppedClose): the reader's slowness is not a failure to close
}
