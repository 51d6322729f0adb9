package ring

import (
	"sync"
	"testing"
	"unsafe"
)

// event is the kind of record the ring carries: a timestamp and a reading.
type event struct {
	seq  uint64
	ns   int64
	line uint32
	edge uint8
}

func TestNewWantsAPowerOfTwo(t *testing.T) {
	for _, n := range []int{0, -4, 3, 12, 1000} {
		if _, err := New[event](n); err == nil {
			t.Errorf("capacity %d accepted", n)
		}
	}
	if r, err := New[event](1); err != nil || r.Cap() != 1 {
		t.Errorf("capacity 1: %v", err)
	}
}

func TestOrderWrapAndDrops(t *testing.T) {
	r, _ := New[event](4)
	out := make([]event, 8)
	seq := uint64(0)
	put := func(n int) (ok int) {
		for i := 0; i < n; i++ {
			if r.Put(event{seq: seq}) {
				ok++
			}
			seq++
		}
		return ok
	}
	if put(3) != 3 || r.Len() != 3 {
		t.Fatalf("len %d", r.Len())
	}
	if n := r.Get(out[:2]); n != 2 || out[0].seq != 0 || out[1].seq != 1 {
		t.Fatalf("got %d: %v", n, out[:n])
	}
	// 1 waiting; 3 fit, the next 2 are dropped, across the wrap.
	if ok := put(5); ok != 3 || r.Dropped() != 2 {
		t.Fatalf("put %d, dropped %d", ok, r.Dropped())
	}
	if n := r.Get(out); n != 4 || out[0].seq != 2 || out[3].seq != 5 {
		t.Fatalf("got %d: %v", n, out[:n])
	}
	if n := r.Get(out); n != 0 {
		t.Fatalf("an empty ring gave %d", n)
	}
	// A batch larger than the room: the head of it goes in, the rest counted.
	batch := []event{{seq: 100}, {seq: 101}, {seq: 102}, {seq: 103}, {seq: 104}, {seq: 105}}
	if n := r.PutBatch(batch); n != 4 || r.Dropped() != 4 {
		t.Fatalf("batch put %d, dropped %d", n, r.Dropped())
	}
	if n := r.Get(out); n != 4 || out[0].seq != 100 || out[3].seq != 103 {
		t.Fatalf("got %d: %v", n, out[:n])
	}
}

// TestConcurrentProducerConsumer: every record arrives once, in order, or is
// counted dropped; the counts add up exactly.
func TestConcurrentProducerConsumer(t *testing.T) {
	const total = 200_000
	r, _ := New[event](64)
	var wg sync.WaitGroup
	wg.Add(1)
	failed := uint64(0)
	go func() {
		defer wg.Done()
		batch := make([]event, 0, 7)
		for s := uint64(0); s < total; s++ {
			if s%3 == 0 { // mix single puts and batches, in order
				failed += uint64(len(batch) - r.PutBatch(batch))
				batch = batch[:0]
				if !r.Put(event{seq: s, ns: int64(s)}) {
					failed++
				}
				continue
			}
			batch = append(batch, event{seq: s, ns: int64(s)})
			if len(batch) == cap(batch) || s == total-1 {
				failed += uint64(len(batch) - r.PutBatch(batch))
				batch = batch[:0]
			}
		}
	}()
	out := make([]event, 16)
	received, last := uint64(0), int64(-1)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		n := r.Get(out)
		for _, e := range out[:n] {
			if int64(e.seq) <= last || e.ns != int64(e.seq) {
				t.Fatalf("record %d after %d (ns %d)", e.seq, last, e.ns)
			}
			last = int64(e.seq)
		}
		received += uint64(n)
		if finished && n == 0 && r.Len() == 0 {
			break
		}
	}
	if received+r.Dropped() != total || r.Dropped() != failed {
		t.Fatalf("received %d + dropped %d != %d (producer saw %d fail)", received, r.Dropped(), total, failed)
	}
	t.Logf("received %d, dropped %d", received, r.Dropped())
}

// TestIndicesOnLinesOfTheirOwn: the producer's and consumer's indices are a
// cache line apart (no false sharing), on 32-bit ARM too.
func TestIndicesOnLinesOfTheirOwn(t *testing.T) {
	var r Ring[event]
	h, d, tl := unsafe.Offsetof(r.head), unsafe.Offsetof(r.dropped), unsafe.Offsetof(r.tail)
	if tl-h < cacheLine || h%8 != 0 || d%8 != 0 || tl%8 != 0 {
		t.Fatalf("head at %d, dropped at %d, tail at %d", h, d, tl)
	}
	if end := unsafe.Sizeof(r); end-tl < cacheLine {
		t.Fatalf("tail at %d shares its line with what follows a %d-byte ring", tl, end)
	}
}

func TestPutGetDoNotAllocate(t *testing.T) {
	r, _ := New[event](8)
	out := make([]event, 4)
	batch := make([]event, 3)
	if n := testing.AllocsPerRun(100, func() {
		r.Put(event{seq: 1})
		r.PutBatch(batch)
		r.Get(out)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
