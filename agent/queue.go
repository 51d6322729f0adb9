package agent

import (
	"sync"

	"github.com/monagent/monagent/record"
)

// recordQueue is the batches waiting for the outputs, bounded in bytes of
// memory (record.MemBytes): a batch that does not fit is dropped and counted
// by the caller, never waited for, so a source never blocks on an output and
// the queue never holds more than its bound, whatever the batches' sizes.
type recordQueue struct {
	mu     sync.Mutex
	items  []queued
	head   int
	bytes  int64
	limit  int64
	closed bool
	ready  chan struct{} // a token when items may be waiting
	space  chan struct{} // a token when a batch has left
}

type queued struct {
	recs []record.Record
	size int64
}

func newRecordQueue(limit int64) *recordQueue {
	return &recordQueue{limit: limit, ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// batchBytes is the memory a batch holds.
func batchBytes(recs []record.Record) int64 {
	n := int64(0)
	for i := range recs {
		n += int64(recs[i].MemBytes())
	}
	return n
}

// put queues recs unless that would take the queue beyond its bound (or it is
// closed); it never waits.
func (q *recordQueue) put(recs []record.Record) bool {
	return q.add(recs, false)
}

// putWait queues recs, waiting for the writer to make room: for the last
// batches of a run, when no source is left to hold up. A batch larger than the
// whole bound goes into an empty queue. False only once the queue is closed.
func (q *recordQueue) putWait(recs []record.Record) bool {
	return q.add(recs, true)
}

func (q *recordQueue) add(recs []record.Record, wait bool) bool {
	size := batchBytes(recs)
	q.mu.Lock()
	for wait && !q.closed && q.bytes > 0 && q.bytes+size > q.limit {
		q.mu.Unlock()
		<-q.space
		q.mu.Lock()
	}
	if q.closed || (q.bytes+size > q.limit && !(wait && q.bytes == 0)) {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, queued{recs, size})
	q.bytes += size
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// get returns the oldest batch, waiting for one; false once the queue is
// closed and empty.
func (q *recordQueue) get() ([]record.Record, bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = queued{}
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

// close makes get return false once the queue is empty; later puts fail.
func (q *recordQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// state is how many batches and bytes wait.
func (q *recordQueue) state() (batches int, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head, q.bytes
}
