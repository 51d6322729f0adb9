package record

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Encoder appends records as line protocol. The zero value is ready; reuse one
// Encoder to encode without allocating.
type Encoder struct {
	enc  lineprotocol.Encoder
	vals []lineprotocol.Value
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
func (e *Encoder) Append(buf []byte, recs []Record) (out []byte, rejected int, err error) {
	e.enc.SetBuffer(buf)
	e.enc.SetPrecision(lineprotocol.Nanosecond)
	var errs []error
	for i := range recs {
		r := &recs[i]
		sortTags(r.Tags)
		if err := e.line(r); err != nil {
			rejected++
			errs = append(errs, &RejectError{Measurement: r.Measurement, Index: i, Err: err})
			e.enc.ClearErr()
		}
	}
	return e.enc.Bytes(), rejected, errors.Join(errs...)
}

func (e *Encoder) line(r *Record) error {
	if len(r.Fields) == 0 {
		return errors.New("no fields")
	}
	if len(r.Measurement) > 0 && r.Measurement[0] == '#' {
		// The encoder would write it, and every reader would skip it as a comment.
		return errors.New("measurement starts with '#', which line protocol reads as a comment")
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
