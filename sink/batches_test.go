package sink

import (
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

func oneRecordBatch() []record.Record {
	return []record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", 1)}, TimeNS: 1}}
}

// The queue holds at most its bound: Put refuses beyond it, PutWait waits
// for the writer to take a batch, and a batch larger than the bound still
// goes, alone, into an empty queue when waiting.
func TestBatchesBoundAndWait(t *testing.T) {
	size := BatchBytes(oneRecordBatch())
	q := NewBatches(3 * size)
	for i := range 3 {
		if !q.Put(oneRecordBatch()) {
			t.Fatalf("batch %d of 3 refused", i)
		}
	}
	if q.Put(oneRecordBatch()) {
		t.Fatal("a fourth batch beyond the bound was queued")
	}
	done := make(chan bool)
	go func() { done <- q.PutWait(oneRecordBatch()) }()
	select {
	case <-done:
		t.Fatal("PutWait did not wait for room")
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := q.Get(); !ok {
		t.Fatal("Get")
	}
	if !<-done {
		t.Fatal("PutWait refused once there was room")
	}
	if n, b := q.State(); n != 3 || b != 3*size {
		t.Fatalf("%d batches, %d bytes", n, b)
	}
	for range 3 {
		q.Get()
	}
	big := append(oneRecordBatch(), oneRecordBatch()[0], oneRecordBatch()[0], oneRecordBatch()[0])
	if q.Put(big) || !q.PutWait(big) {
		t.Fatal("a batch larger than the bound: Put must refuse it, PutWait take it into the empty queue")
	}
	q.Close()
	if recs, ok := q.Get(); !ok || len(recs) != 4 {
		t.Fatal("the queued batch is still handed out after close")
	}
	if _, ok := q.Get(); ok {
		t.Fatal("Get after close and empty")
	}
	if q.PutWait(oneRecordBatch()) {
		t.Fatal("PutWait after close")
	}
}

// The queue counts what it took and what it refused, records included;
// after Drain, Put waits for room instead of refusing.
func TestBatchesCountAndDrain(t *testing.T) {
	size := BatchBytes(oneRecordBatch())
	q := NewBatches(2 * size)
	q.Put(oneRecordBatch())
	q.Put(oneRecordBatch())
	two := append(oneRecordBatch(), oneRecordBatch()...)
	if q.Put(two) {
		t.Fatal("a batch beyond the bound was queued")
	}
	if st := q.Stats(); st != (BatchStats{Batches: 2, DroppedBatches: 1, DroppedRecords: 2}) {
		t.Errorf("stats %+v, want 2 queued, 1 dropped of 2 records", st)
	}
	q.Drain()
	done := make(chan bool)
	go func() { done <- q.Put(oneRecordBatch()) }()
	select {
	case <-done:
		t.Fatal("Put after Drain did not wait for room")
	case <-time.After(50 * time.Millisecond):
	}
	q.Get()
	if !<-done {
		t.Fatal("Put after Drain refused once there was room")
	}
	if st := q.Stats(); st.Batches != 3 || st.DroppedBatches != 1 {
		t.Errorf("stats %+v after the drained put", st)
	}
}
