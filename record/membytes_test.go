package record

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestMemBytesBoundsTheHeap(t *testing.T) {
	const n = 10000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs := make([]Record, 0, n)
	total := n * int(unsafe.Sizeof(Record{}))
	for i := range n {
		r := Record{Measurement: "m", TimeNS: int64(i),
			Tags:   []Tag{{Key: "host", Value: strconv.Itoa(i)}},
			Fields: []Field{Int("a", int64(i)), String("s", strings.Repeat("x", i%100)), Float("f", 1)}}
		recs = append(recs, r)
		total += r.MemBytes() - int(unsafe.Sizeof(r))
	}
	runtime.ReadMemStats(&after)
	used := int(after.TotalAlloc - before.TotalAlloc)
	if total < used {
		t.Fatalf("MemBytes sums to %d for %d records that allocated %d", total, n, used)
	}
	if total > 2*used {
		t.Fatalf("MemBytes sums to %d, more than twice the %d allocated", total, used)
	}
	t.Logf("%d records: MemBytes %d, allocated %d", len(recs), total, used)
}
