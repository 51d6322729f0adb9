package sink

import (
	"sync"
	"sync/atomic"

	"github.com/monagent/monagent/record"
)

// Batches are batches of records waiting for a writer, bounded in bytes of
// memory (BatchBytes): Put drops a batch that does not fit, and counts it,
// and never waits, so a producer never blocks on the writer and the queue
// never holds more than its bound, whatever the batches' sizes. Any number
// of goroutines may Put; one writer Gets.
type Batches struct {
	draining                    atomic.Bool // Put waits for room (Drain)
	taken, dropped, droppedRecs atomic.Uint64

	mu     sync.Mutex
	items  []waiting
	head   int
	bytes  int64
	limit  int64
	closed bool
	ready  chan struct{} // a token when items may be waiting
	space  chan struct{} // a token when a batch has left
}

type waiting struct {
	recs []record.Record
	size int64
}

// NewBatches returns an empty queue of at most limit bytes.
func NewBatches(limit int64) *Batches {
	return &Batches{limit: limit, ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// BatchBytes is the memory a batch holds, as Batches counts it.
func BatchBytes(recs []record.Record) int64 {
	n := int64(0)
	for i := range recs {
		n += int64(recs[i].MemBytes())
	}
	return n
}

// Put queues recs unless that would take the queue beyond its bound (or it
// is closed); it never waits, until Drain. After Drain it waits for the
// writer to make room, and a batch larger than the whole bound goes into an
// empty queue: false only once the queue is closed.
func (q *Batches) Put(recs []record.Record) bool {
	wait := q.draining.Load()
	size := BatchBytes(recs)
	q.mu.Lock()
	for wait && !q.closed && q.bytes > 0 && q.bytes+size > q.limit {
		q.mu.Unlock()
		<-q.space
		q.mu.Lock()
	}
	if q.closed || (q.bytes+size > q.limit && !(wait && q.bytes == 0)) {
		q.mu.Unlock()
		q.dropped.Add(1)
		q.droppedRecs.Add(uint64(len(recs)))
		return false
	}
	q.items = append(q.items, waiting{recs, size})
	q.bytes += size
	q.mu.Unlock()
	q.taken.Add(1)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// Drain makes Put wait for room: for the last batches of a run, when no
// producer is left to hold up.
func (q *Batches) Drain() { q.draining.Store(true) }

// Draining says whether Drain was called.
func (q *Batches) Draining() bool { return q.draining.Load() }

// BatchStats are what a queue took and dropped.
type BatchStats struct {
	Batches                        uint64 // batches queued
	DroppedBatches, DroppedRecords uint64 // batches refused (beyond the bound, or closed), and their records
}

// Stats are the queue's counts so far.
func (q *Batches) Stats() BatchStats {
	return BatchStats{Batches: q.taken.Load(), DroppedBatches: q.dropped.Load(), DroppedRecords: q.droppedRecs.Load()}
}

// Get returns the oldest batch, waiting for one; false once the queue is
// closed and empty.
func (q *Batches) Get() ([]record.Record, bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = waiting{}
			q.head++
			q.bytes -= it.size
			if q.head > len(q.items)/2 { // reuse the array's start: it never outgrows the waiting batches twice
				n := copy(q.items, q.items[q.head:])
				clear(q.items[n:])
				q.items, q.head = q.items[:n], 0
			}
			q.mu.Unlock()
			select {
			case q.space <- struct{}{}:
			default:
			}
			return it.recs, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		<-q.ready
	}
}

// Close makes Get return false once the queue is empty; later puts fail.
func (q *Batches) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// State is how many batches and bytes wait.
func (q *Batches) State() (batches int, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head, q.bytes
}
