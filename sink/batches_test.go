package sink

import (
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

func oneRecordBatch() []record.Record {
	return []record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", 1)}, TimeNS: 1}}
}

// The queue holds at most its bound: Put refuses beyond it and counts what
// it refused, records included. After Drain, Put waits for the writer to
// take a batch, and a batch larger than the bound still goes, alone, into
// an empty queue.
func TestBatchesBoundAndWait(t *testing.T) {
	size := BatchBytes(oneRecordBatch())
	q := NewBatches(3 * size)
	big := append(oneRecordBatch(), oneRecordBatch()[0], oneRecordBatch()[0], oneRecordBatch()[0])
	if q.Put(big) {
		t.Fatal("a batch larger than the bound was queued before Drain")
	}
	for i := range 3 {
		if !q.Put(oneRecordBatch()) {
			t.Fatalf("batch %d of 3 refused", i)
		}
	}
	if q.Put(oneRecordBatch()) {
		t.Fatal("a fourth batch beyond the bound was queued")
	}
	if st := q.Stats(); st != (BatchStats{Batches: 3, DroppedBatches: 2, DroppedRecords: 5}) {
		t.Errorf("stats %+v, want 3 queued, 2 dropped of 5 records", st)
	}
	q.Drain()
	done := make(chan bool)
	go func() { done <- q.Put(oneRecordBatch()) }()
	select {
	case <-done:
		t.Fatal("Put after Drain did not wait for room")
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := q.Get(); !ok {
		t.Fatal("Get")
	}
	if !<-done {
		t.Fatal("Put after Drain refused once there was room")
	}
	if n, b := q.State(); n != 3 || b != 3*size {
		t.Fatalf("%d batches, %d bytes", n, b)
	}
	for range 3 {
		q.Get()
	}
	if !q.Put(big) {
		t.Fatal("after Drain, a batch larger than the bound must go into the empty queue")
	}
	q.Close()
	if recs, ok := q.Get(); !ok || len(recs) != 4 {
		t.Fatal("the queued batch is still handed out after close")
	}
	if _, ok := q.Get(); ok {
		t.Fatal("Get after close and empty")
	}
	if q.Put(oneRecordBatch()) {
		t.Fatal("Put after close")
	}
	if st := q.Stats(); st != (BatchStats{Batches: 5, DroppedBatches: 3, DroppedRecords: 6}) {
		t.Errorf("stats %+v at the end, want 5 queued, 3 dropped of 6 records", st)
	}
}
