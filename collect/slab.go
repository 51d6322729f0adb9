package collect

import "github.com/monagent/monagent/record"

// Slab hands out the fields of records from shared allocations: one
// allocation holds the fields of many records (NewSlab's records), and each
// record keeps its part of it until shipped. A source that emits many
// records per collection (one per kernel event) uses it so that emitting
// does not allocate per record. One goroutine only.
type Slab struct {
	fields, records int
	buf             []record.Field
}

// NewSlab returns a slab for records of at most fields fields, records of
// them per allocation.
func NewSlab(fields, records int) Slab { return Slab{fields: fields, records: records} }

// Next is an empty slice with room for one record's fields, in the slab
// (a new allocation when the slab is full). Append at most the slab's
// fields to it, then Keep the result.
func (s *Slab) Next() []record.Field {
	if cap(s.buf)-len(s.buf) < s.fields {
		s.buf = make([]record.Field, 0, s.fields*s.records)
	}
	return s.buf[len(s.buf) : len(s.buf) : len(s.buf)+s.fields]
}

// Keep marks f, the slice from Next with a record's fields appended, as
// that record's: the next record's fields follow it.
func (s *Slab) Keep(f []record.Field) []record.Field {
	s.buf = s.buf[:len(s.buf)+len(f)]
	return f
}
