package collect_test

import (
	"slices"
	"testing"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
)

// Records built from a slab keep their own fields: a later record never
// writes into an earlier one's, across the slab's allocations.
func TestSlabKeepsEachRecordsFields(t *testing.T) {
	s := collect.NewSlab(3, 4)
	var recs [][]record.Field
	for i := range 10 {
		f := s.Next()
		if len(f) != 0 || cap(f) != 3 {
			t.Fatalf("record %d: len %d cap %d, want 0 and 3", i, len(f), cap(f))
		}
		f = append(f, record.Int("i", int64(i)))
		if i%2 == 0 {
			f = append(f, record.Int("even", 1), record.Int("j", int64(i)))
		}
		recs = append(recs, s.Keep(f))
	}
	for i, f := range recs {
		want := []record.Field{record.Int("i", int64(i))}
		if i%2 == 0 {
			want = append(want, record.Int("even", 1), record.Int("j", int64(i)))
		}
		if !slices.Equal(f, want) {
			t.Fatalf("record %d: %v, want %v", i, f, want)
		}
	}
}

// A slab allocates once per its records' worth of records.
func TestSlabAllocatesOncePerSlab(t *testing.T) {
	s := collect.NewSlab(4, 64)
	allocs := testing.AllocsPerRun(100, func() {
		for range 64 {
			f := s.Next()
			s.Keep(append(f, record.Int("a", 1), record.Uint("b", 2), record.String("c", "d"), record.Int("e", 3)))
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations per 64 records, want 1", allocs)
	}
}
