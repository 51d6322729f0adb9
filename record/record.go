package record

import (
	"strconv"
	"unsafe"
)

// Record is one InfluxDB point. TimeNS is UTC (CLOCK_REALTIME) nanoseconds, the
// only time InfluxDB indexes by; times in other clock domains travel as fields
// named for their domain (e.g. phc_ns).
type Record struct {
	Measurement string
	Tags        []Tag // low-cardinality labels; encoding sorts them in place
	Fields      []Field
	TimeNS      int64
}

// Tag is a key=value label.
type Tag struct{ Key, Value string }

// Kind is a field's value type.
type Kind uint8

// Field value kinds.
const (
	KindInt Kind = iota
	KindUint
	KindFloat
	KindBool
	KindString
)

// Field is one field of a record. Build fields with Int, Uint, Float, Bool and
// String.
type Field struct {
	Key  string
	Kind Kind
	// Level marks an unsigned field that is a level (a queue's depth, a
	// run of failures), not a count: a gauge on /metrics, where every other
	// unsigned field is a counter. It fills Kind's padding: a Field is no
	// larger for it.
	Level bool
	I     int64 // KindInt, KindBool (0/1)
	U     uint64
	F     float64
	S     string
}

// Int returns an integer field.
func Int(key string, v int64) Field { return Field{Key: key, Kind: KindInt, I: v} }

// Uint returns an unsigned integer field. It is written as a line-protocol
// integer, which every InfluxDB version accepts; values above 2^63-1 are refused.
func Uint(key string, v uint64) Field { return Field{Key: key, Kind: KindUint, U: v} }

// Level returns an unsigned field that is a level, not a count (Field.Level);
// written as Uint is.
func Level(key string, v uint64) Field { return Field{Key: key, Kind: KindUint, U: v, Level: true} }

// Float returns a float field.
func Float(key string, v float64) Field { return Field{Key: key, Kind: KindFloat, F: v} }

// Bool returns a boolean field.
func Bool(key string, v bool) Field {
	f := Field{Key: key, Kind: KindBool}
	if v {
		f.I = 1
	}
	return f
}

// String returns a string field.
func String(key, v string) Field { return Field{Key: key, Kind: KindString, S: v} }

// Value returns the field's value as Go would print it (for messages and tests).
func (f Field) Value() string {
	switch f.Kind {
	case KindInt:
		return strconv.FormatInt(f.I, 10)
	case KindUint:
		return strconv.FormatUint(f.U, 10)
	case KindFloat:
		return strconv.FormatFloat(f.F, 'g', -1, 64)
	case KindBool:
		return strconv.FormatBool(f.I != 0)
	}
	return f.S
}

// Tag returns the value of tag key, or "".
func (r Record) Tag(key string) string {
	for _, t := range r.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// Field returns the field named key.
func (r Record) Field(key string) (Field, bool) {
	for _, f := range r.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// MemBytes bounds the memory r holds: the record, its tag and field arrays
// and the bytes of every string, each allocation rounded up as the Go
// allocator's size classes do (by at most an eighth, plus 16 bytes). A string
// shared with other records is counted again, so a sum over records never
// falls short.
func (r *Record) MemBytes() int {
	n := int(unsafe.Sizeof(*r)) + alloc(len(r.Measurement)) +
		alloc(cap(r.Tags)*int(unsafe.Sizeof(Tag{}))) + alloc(cap(r.Fields)*int(unsafe.Sizeof(Field{})))
	for _, t := range r.Tags {
		n += alloc(len(t.Key)) + alloc(len(t.Value))
	}
	for i := range r.Fields {
		n += alloc(len(r.Fields[i].Key)) + alloc(len(r.Fields[i].S))
	}
	return n
}

// alloc is n bytes rounded up past the allocator's size class.
func alloc(n int) int {
	if n == 0 {
		return 0
	}
	return n + n/8 + 16
}
