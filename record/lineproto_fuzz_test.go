package record

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

var time0 = time.Unix(0, 0)

// FuzzEncodeRoundTrip encodes arbitrary names, tags and values. Whatever is
// accepted must decode back, with InfluxDB's own decoder, to exactly what went in;
// whatever is refused must leave the output empty.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("phc_offset", "device", "ptp0", "offset_ns", int64(-37000000312), 1.5, "extended", int64(1795000000123456789))
	f.Add("odd name,x", "k y", "v=1,2", "msg", int64(0), math.Inf(1), `say "hi"\`, int64(-5))
	f.Add("m\\", "t\\", "v\\", "f\\", int64(1), 0.0, "\\", int64(0))
	f.Add("#comment", "=", ",", " ", int64(1), -0.0, "\n", int64(1))
	f.Fuzz(func(t *testing.T, meas, tk, tv, fk string, iv int64, fv float64, sv string, ts int64) {
		recs := []Record{{
			Measurement: meas,
			Tags:        []Tag{{tk, tv}},
			Fields:      []Field{Int(fk+"_i", iv), Float(fk+"_f", fv), String(fk+"_s", sv)},
			TimeNS:      ts,
		}}
		var e Encoder
		out, rejected, err := e.Append(nil, recs)
		if rejected != 0 {
			if err == nil || len(out) != 0 {
				t.Fatalf("rejected with err %v, output %q", err, out)
			}
			return
		}
		dec := lineprotocol.NewDecoderWithBytes(out)
		if !dec.Next() {
			t.Fatalf("no line in %q", out)
		}
		m, err := dec.Measurement()
		if err != nil || string(m) != meas {
			t.Fatalf("measurement %q (%v), want %q; line %q", m, err, meas, out)
		}
		for {
			k, v, err := dec.NextTag()
			if err != nil {
				t.Fatalf("tag: %v in %q", err, out)
			}
			if k == nil {
				break
			}
			if string(k) != tk || string(v) != tv {
				t.Fatalf("tag %q=%q, want %q=%q", k, v, tk, tv)
			}
		}
		n := 0
		for {
			k, v, err := dec.NextField()
			if err != nil {
				t.Fatalf("field: %v in %q", err, out)
			}
			if k == nil {
				break
			}
			n++
			switch string(k) {
			case fk + "_i":
				if v.IntV() != iv {
					t.Fatalf("int %d, want %d", v.IntV(), iv)
				}
			case fk + "_f":
				if v.FloatV() != fv {
					t.Fatalf("float %v, want %v", v.FloatV(), fv)
				}
			case fk + "_s":
				if v.StringV() != sv {
					t.Fatalf("string %q, want %q", v.StringV(), sv)
				}
			}
		}
		if n != 3 {
			t.Fatalf("%d fields decoded from %q", n, out)
		}
		tm, err := dec.Time(lineprotocol.Nanosecond, time0)
		if err != nil || tm.UnixNano() != ts {
			t.Fatalf("time %v (%v), want %d", tm, err, ts)
		}
		if dec.Next() || !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("more than one line in %q", out)
		}
	})
}

// FuzzPlainMatchesEncoder: whatever the plain path writes, the validating
// encoder writes byte for byte.
func FuzzPlainMatchesEncoder(f *testing.F) {
	f.Add("gpio_event", "chip", "gpiochip0", "kernel_ns", int64(-5), 1.5, "rising", true, int64(1795000000123456789))
	f.Add("m", "k", "", "f", int64(0), -0.0, "", false, int64(0))
	f.Fuzz(func(t *testing.T, meas, tk, tv, fk string, iv int64, fv float64, sv string, bv bool, ts int64) {
		r := Record{Measurement: meas, Tags: []Tag{{tk, tv}, {tk + "z", tv}},
			Fields: []Field{Int(fk, iv), Float(fk+"f", fv), String(fk+"s", sv), Bool(fk+"b", bv), Uint(fk+"u", uint64(iv))}, TimeNS: ts}
		fast, ok := plainOnce(nil, &r)
		if !ok {
			return
		}
		var e Encoder
		slow, err := slowAppend(&e, nil, &r)
		if err != nil || string(fast) != string(slow) {
			t.Fatalf("plain   %q\nencoder %q (%v)", fast, slow, err)
		}
	})
}
