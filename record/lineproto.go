package record

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Encoder appends records as line protocol. The zero value is ready; reuse one
// Encoder to encode without allocating.
type Encoder struct {
	enc  lineprotocol.Encoder
	vals []lineprotocol.Value
	// The series (measurement and tags) and field keys of recent plain
	// records, checked and encoded once: an agent ships many records of few
	// series. Compared by content (strings are immutable, and equal strings
	// that share their bytes compare at once), so a hit is exact.
	series [seriesCache]seriesEntry
	next   int
}

// seriesCache is how many series an Encoder keeps encoded.
const seriesCache = 8

type seriesEntry struct {
	meas   string
	tags   []Tag    // as the record had them (sorted), empty values too
	keys   []string // field keys last seen with this series, all plain
	prefix []byte   // "measurement,k=v,k=v"
	// hint is where the tags of the record that last used the entry were
	// (callers often share one tag slice among a series' records): checked
	// first, and then confirmed by content like any entry.
	hint *Tag
}

// RejectError describes a record the encoder refused.
type RejectError struct {
	Measurement string
	Index       int // position in the batch
	Err         error
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("record %d (%q) rejected: %v", e.Index, e.Measurement, e.Err)
}

func (e *RejectError) Unwrap() error { return e.Err }

// Append encodes recs after buf and returns the extended buffer. Records that
// cannot be encoded are left out; the error then joins one RejectError for each of
// them, and rejected says how many there were. Append sorts each record's tags.
//
// A record whose names, keys and string values need no escaping (the agent's
// own records) is written directly (appendPlain); any other goes through
// InfluxData's validating encoder. Both write the same bytes for a plain
// record (TestPlainMatchesEncoder, FuzzPlainMatchesEncoder).
func (e *Encoder) Append(buf []byte, recs []Record) (out []byte, rejected int, err error) {
	var errs []error
	for i := range recs {
		r := &recs[i]
		sortTags(r.Tags)
		if b, ok := e.appendPlain(buf, r); ok {
			buf = b
			continue
		}
		e.enc.SetBuffer(buf)
		e.enc.SetPrecision(lineprotocol.Nanosecond)
		if err := e.line(r); err != nil {
			rejected++
			errs = append(errs, &RejectError{Measurement: r.Measurement, Index: i, Err: err})
			e.enc.ClearErr()
		}
		buf = e.enc.Bytes()
	}
	return buf, rejected, errors.Join(errs...)
}

// plainByte marks the bytes a name, key or tag value may hold without
// escaping or validation: printable ASCII but for space, comma, equals,
// double quote and backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range ` ,="\` {
		t[c] = false
	}
	return t
}()

func plain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// plainString is a string field value needing no escaping: printable ASCII
// and space, without double quote or backslash.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && !plainByte[c] {
			return false
		}
	}
	return true
}

// appendPlain writes a record that needs no escaping, exactly as the
// validating encoder would, or reports false (leaving dst as it was) for the
// encoder to write or refuse. r's tags must be sorted by key.
func (e *Encoder) appendPlain(dst []byte, r *Record) ([]byte, bool) {
	if len(r.Fields) == 0 {
		return dst, false
	}
	se := e.lookup(r)
	if se == nil {
		if se = e.add(r); se == nil {
			return dst, false
		}
	}
	n := len(dst)
	dst = append(dst, se.prefix...)
	known := len(se.keys) == len(r.Fields)
	for i := 0; known && i < len(r.Fields); i++ {
		known = se.keys[i] == r.Fields[i].Key
	}
	sep := byte(' ')
	for i := range r.Fields {
		f := &r.Fields[i]
		if !known && !plain(f.Key) {
			return dst[:n], false
		}
		dst = append(dst, sep)
		sep = ','
		dst = append(dst, f.Key...)
		dst = append(dst, '=')
		switch f.Kind {
		case KindInt:
			dst = strconv.AppendInt(dst, f.I, 10)
			dst = append(dst, 'i')
		case KindUint:
			if f.U > math.MaxInt64 {
				return dst[:n], false
			}
			dst = strconv.AppendInt(dst, int64(f.U), 10)
			dst = append(dst, 'i')
		case KindFloat:
			if math.IsNaN(f.F) || math.IsInf(f.F, 0) {
				return dst[:n], false
			}
			dst = strconv.AppendFloat(dst, f.F, 'g', -1, 64)
		case KindBool:
			if f.I != 0 {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case KindString:
			if !plainString(f.S) {
				return dst[:n], false
			}
			dst = append(dst, '"')
			dst = append(dst, f.S...)
			dst = append(dst, '"')
		default:
			return dst[:n], false
		}
	}
	if !known { // every key was checked; a repeated one is refused by line
		if repeatedKey(r.Fields) >= 0 {
			return dst[:n], false
		}
		se.keys = se.keys[:0]
		for i := range r.Fields {
			se.keys = append(se.keys, r.Fields[i].Key)
		}
	}
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, r.TimeNS, 10)
	return append(dst, '\n'), true
}

// lookup finds the record's series among the kept ones.
func (e *Encoder) lookup(r *Record) *seriesEntry {
	var hint *Tag
	if len(r.Tags) > 0 {
		hint = &r.Tags[0]
		for i := range e.series {
			if se := &e.series[i]; se.hint == hint && se.same(r) {
				return se
			}
		}
	}
	for i := range e.series {
		if se := &e.series[i]; se.same(r) {
			se.hint = hint
			return se
		}
	}
	return nil
}

// same says whether r is of the entry's series: the same measurement and
// tags, by content.
func (se *seriesEntry) same(r *Record) bool {
	if se.prefix == nil || se.meas != r.Measurement || len(se.tags) != len(r.Tags) {
		return false
	}
	for j := range r.Tags {
		if se.tags[j] != r.Tags[j] {
			return false
		}
	}
	return true
}

// add checks and encodes the record's series and keeps it (replacing the
// oldest), or returns nil when it needs escaping or is invalid.
func (e *Encoder) add(r *Record) *seriesEntry {
	if !plain(r.Measurement) || r.Measurement[0] == '#' {
		return nil
	}
	prev := ""
	for i := range r.Tags {
		t := &r.Tags[i]
		if t.Value == "" { // InfluxDB drops empty tags; so do we
			continue
		}
		// Sorted (Append sorts them), so only a repeated key can be out of
		// order; the encoder refuses it.
		if !plain(t.Key) || !plain(t.Value) || t.Key == prev {
			return nil
		}
		prev = t.Key
	}
	se := &e.series[e.next]
	e.next = (e.next + 1) % seriesCache
	se.meas = r.Measurement
	se.tags = append(se.tags[:0], r.Tags...)
	se.hint = nil
	if len(r.Tags) > 0 {
		se.hint = &r.Tags[0]
	}
	se.keys = se.keys[:0]
	p := append(se.prefix[:0], r.Measurement...)
	for i := range r.Tags {
		if t := &r.Tags[i]; t.Value != "" {
			p = append(p, ',')
			p = append(p, t.Key...)
			p = append(p, '=')
			p = append(p, t.Value...)
		}
	}
	se.prefix = p
	return se
}

func (e *Encoder) line(r *Record) error {
	if len(r.Fields) == 0 {
		return errors.New("no fields")
	}
	if len(r.Measurement) > 0 && r.Measurement[0] == '#' {
		// The encoder would write it, and every reader would skip it as a comment.
		return errors.New("measurement starts with '#', which line protocol reads as a comment")
	}
	if i := repeatedKey(r.Fields); i >= 0 {
		// InfluxDB would keep one of them: which one a reader sees is luck.
		return fmt.Errorf("field %q given twice", r.Fields[i].Key)
	}
	// Check values before the line starts, so a bad one leaves nothing behind.
	e.vals = e.vals[:0]
	for i := range r.Fields {
		v, err := value(&r.Fields[i])
		if err != nil {
			return err
		}
		e.vals = append(e.vals, v)
	}
	// The line is always completed: the encoder drops a line with an invalid
	// name or key itself, and stays ready for the next one.
	e.enc.StartLine(r.Measurement)
	for _, t := range r.Tags {
		if t.Value == "" { // InfluxDB drops empty tags; so do we
			continue
		}
		e.enc.AddTag(t.Key, t.Value)
	}
	for i, v := range e.vals {
		e.enc.AddField(r.Fields[i].Key, v)
	}
	e.enc.EndLine(time.Unix(0, r.TimeNS))
	return e.enc.Err()
}

// repeatedKey is the index of the first field whose key an earlier field
// has, or -1. Records have a few dozen fields at most, and the plain path
// checks a series' key list once.
func repeatedKey(fs []Field) int {
	for i := 1; i < len(fs); i++ {
		for j := 0; j < i; j++ {
			if fs[i].Key == fs[j].Key {
				return i
			}
		}
	}
	return -1
}

func value(f *Field) (lineprotocol.Value, error) {
	switch f.Kind {
	case KindInt:
		return lineprotocol.IntValue(f.I), nil
	case KindUint:
		// Written as an integer: InfluxDB 1.x OSS refuses the "u" suffix (400
		// "invalid number"), and counters never reach 2^63.
		if f.U > math.MaxInt64 {
			return lineprotocol.Value{}, fmt.Errorf("field %q: unsigned %d does not fit an InfluxDB integer", f.Key, f.U)
		}
		return lineprotocol.IntValue(int64(f.U)), nil
	case KindFloat:
		v, ok := lineprotocol.FloatValue(f.F)
		if !ok {
			return v, fmt.Errorf("field %q: non-finite float %v", f.Key, f.F)
		}
		return v, nil
	case KindBool:
		return lineprotocol.BoolValue(f.I != 0), nil
	case KindString:
		// Zero-copy: the encoder only reads the bytes before Append returns.
		v, err := lineprotocol.NewValueFromBytes(lineprotocol.String, unsafe.Slice(unsafe.StringData(f.S), len(f.S)))
		if err != nil {
			return v, fmt.Errorf("field %q: %w", f.Key, err)
		}
		return v, nil
	}
	return lineprotocol.Value{}, fmt.Errorf("field %q: unknown kind %d", f.Key, f.Kind)
}

// sortTags is an insertion sort: records have a handful of tags, often sorted.
func sortTags(t []Tag) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j].Key < t[j-1].Key; j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}
