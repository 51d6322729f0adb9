package agent

import (
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

func oneRecordBatch() []record.Record {
	return []record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", 1)}, TimeNS: 1}}
}

// The queue holds at most its bound: put refuses beyond it, putWait waits
// for the writer to take a batch, and a batch larger than the bound still
// goes, alone, into an empty queue when waiting.
func TestRecordQueueBoundAndWait(t *testing.T) {
	size := batchBytes(oneRecordBatch())
	q := newRecordQueue(3 * size)
	for i := range 3 {
		if !q.put(oneRecordBatch()) {
			t.Fatalf("batch %d of 3 refused", i)
		}
	}
	if q.put(oneRecordBatch()) {
		t.Fatal("a fourth batch beyond the bound was queued")
	}
	done := make(chan bool)
	go func() { done <- q.putWait(oneRecordBatch()) }()
	select {
	case <-done:
		t.Fatal("putWait did not wait for room")
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := q.get(); !ok {
		t.Fatal("get")
	}
	if !<-done {
		t.Fatal("putWait refused once there was room")
	}
	if n, b := q.state(); n != 3 || b != 3*size {
		t.Fatalf("%d batches, %d bytes", n, b)
	}
	for range 3 {
		q.get()
	}
	big := append(oneRecordBatch(), oneRecordBatch()[0], oneRecordBatch()[0], oneRecordBatch()[0])
	if q.put(big) || !q.putWait(big) {
		t.Fatal("a batch larger than the bound: put must refuse it, putWait take it into the empty queue")
	}
	q.close()
	if recs, ok := q.get(); !ok || len(recs) != 4 {
		t.Fatal("the queued batch is still handed out after close")
	}
	if _, ok := q.get(); ok {
		t.Fatal("get after close and empty")
	}
	if q.putWait(oneRecordBatch()) {
		t.Fatal("putWait after close")
	}
}
