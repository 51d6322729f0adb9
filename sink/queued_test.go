package sink

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

func batch(first, n int) []record.Record {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Measurement: "m", Fields: []record.Field{record.Int("i", int64(first+i))}, TimeNS: int64(first + i)}
	}
	return recs
}

// memOut is a destination: a buffer, optionally held shut by gate until
// released, or failing its first writes.
type memOut struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	gate   chan struct{}
	fail   int
	opens  int
	closed int
}

func (m *memOut) open() (io.WriteCloser, error) { m.mu.Lock(); m.opens++; m.mu.Unlock(); return m, nil }
func (m *memOut) Close() error                  { m.mu.Lock(); m.closed++; m.mu.Unlock(); return nil }
func (m *memOut) Write(b []byte) (int, error) {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail > 0 {
		m.fail--
		return 0, errors.New("disk on fire")
	}
	return m.buf.Write(b)
}

// accounted checks that every record handed over is counted exactly once.
func accounted(t *testing.T, st QueuedStats, handed int) {
	t.Helper()
	if got := st.Written + st.Rejected + st.DroppedFull + st.DroppedError + st.DroppedClose; got != uint64(handed) {
		t.Fatalf("handed %d records, accounted %d: %+v", handed, got, st)
	}
}

func TestQueuedWritesInOrder(t *testing.T) {
	out := &memOut{}
	q := NewQueued("mem", out.open, 1<<20)
	var want strings.Builder
	for i := 0; i < 100; i++ {
		if err := q.Write(batch(i*10, 10)); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			want.WriteString("m i=" + itoa(i*10+j) + "i " + itoa(i*10+j) + "\n")
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if out.buf.String() != want.String() {
		t.Fatal("the destination holds other lines than were written, or in another order")
	}
	st := q.Stats()
	if st.Written != 1000 || st.DroppedFull+st.DroppedError+st.DroppedClose != 0 || out.closed != 1 {
		t.Fatalf("stats %+v, closed %d", st, out.closed)
	}
	accounted(t, st, 1000)
}

func itoa(i int) string { return strconv.Itoa(i) }

// A destination that stops taking data (a FIFO read by nobody) holds up no
// Write: beyond the bound batches are dropped and counted, memory stays
// within it, and Close gives up after its grace with the rest counted.
func TestQueuedNeverWaitsForAStalledWriter(t *testing.T) {
	out := &memOut{gate: make(chan struct{})}
	defer close(out.gate)
	const bound = 64 << 10
	q := NewQueued("stalled", out.open, bound)
	handed := 0
	// The 2000 Writes together, not each against 100 ms (which one stall of
	// a loaded machine passes): a Write that waited for the writer would
	// never return, and one that waited even 10 ms for room before dropping
	// would take 19 s over the ~1900 drops; unhindered they take
	// milliseconds.
	var writing, slowest time.Duration
	for i := 0; i < 2000; i++ {
		start := time.Now()
		err := q.Write(batch(i*10, 10))
		d := time.Since(start)
		writing, slowest = writing+d, max(slowest, d)
		if err != nil && !errors.Is(err, ErrQueueFull) {
			t.Fatal(err)
		}
		handed += 10
		if qb := q.Stats().QueuedBytes; qb > bound {
			t.Fatalf("%d bytes queued, bound %d", qb, bound)
		}
	}
	t.Logf("2000 writes took %v, the slowest %v", writing, slowest)
	if writing > 5*time.Second {
		t.Fatalf("2000 writes took %v (the slowest %v): they waited for the writer", writing, slowest)
	}
	st := q.Stats()
	if st.DroppedFull == 0 {
		t.Fatalf("nothing dropped behind a stalled writer: %+v", st)
	}
	// Waiting for the stalled writer, the close would never end: 5 s tells
	// that from the 200 ms grace with room for a loaded machine (it was 1 s).
	start := time.Now()
	err := q.CloseWithin(200 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("close took %v", d)
	}
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	st = q.Stats()
	if st.DroppedClose == 0 {
		t.Fatalf("close counted nothing left: %+v", st)
	}
	accounted(t, st, handed)
	if err := q.Write(batch(0, 3)); err == nil {
		t.Fatal("write after close accepted")
	}
	accounted(t, q.Stats(), handed+3)
	t.Logf("handed %d: %+v", handed+3, q.Stats())
}

// A failed write loses its records, counted, and the destination is opened
// again for the next.
func TestQueuedCountsFailedWrites(t *testing.T) {
	out := &memOut{fail: 1}
	q := NewQueued("flaky", out.open, 1<<20)
	q.Write(batch(0, 5))
	deadline := time.Now().Add(5 * time.Second)
	for q.Stats().WriteErrors == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := q.Stats(); st.LastError == "" || !strings.Contains(st.LastError, "disk on fire") {
		t.Fatalf("last error %q", st.LastError)
	}
	q.Write(batch(5, 5))
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	if st.DroppedError != 5 || st.Written != 5 || st.LastError != "" || out.opens != 2 {
		t.Fatalf("stats %+v, opens %d", st, out.opens)
	}
	accounted(t, st, 10)
}

// The summary says what was written, and what was not only when there is
// some.
func TestQueuedSummary(t *testing.T) {
	out := &memOut{}
	q := NewQueued("mem", out.open, 1<<20)
	tiny := NewQueued("tiny", (&memOut{}).open, 16) // no batch fits
	for _, s := range []*Queued{q, tiny} {
		s.Write(batch(0, 10))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := q.Summary(), "wrote 10 records ("+itoa(out.buf.Len())+" bytes) to mem"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	if got, want := tiny.Summary(), "wrote 0 records (0 bytes) to tiny; 10 not written (queue full 10, write errors 0, at close 0)"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
}
