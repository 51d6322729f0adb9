package gnss

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// FuzzDecodeLine: no line panics the decoder; a line it accepts is valid
// JSON, and what it took from it is what encoding/json reads there.
func FuzzDecodeLine(f *testing.F) {
	for _, line := range goldenLines(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"class":"TPV","mode":3,"time":"2024-02-29T23:59:60.1Z","ept":1e-3}`))
	f.Add([]byte(`{"class":"SKY","satellites":[{"used":true},{"used":false,"x":[1,{"y":null}]}]}`))
	f.Add([]byte(`{"cl\u0061ss":"PPS","device":"\ud83d\ude00","real_sec":1,"real_nsec":2,"clock_sec":3,"clock_nsec":4}`))
	var d Decoder
	f.Fuzz(func(t *testing.T, line []byte) {
		var m Message
		err := d.Decode(line, &m)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrGarbage) && !errors.Is(err, ErrUnknownClass) {
				t.Fatalf("%q: %T %v is no *LineError", line, err, err)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("%q accepted, but it is no valid JSON", line)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("%q accepted, but encoding/json: %v", line, err)
		}
		str := func(k string) (string, bool) {
			var s string
			raw, ok := obj[k]
			return s, ok && json.Unmarshal(raw, &s) == nil
		}
		num := func(k string) (int64, bool) {
			raw, ok := obj[k]
			if !ok {
				return 0, false
			}
			n, err := strconv.ParseInt(string(raw), 10, 64)
			return n, err == nil
		}
		if c, ok := str("class"); !ok || c != m.Class.String() {
			t.Fatalf("%q: class %s, encoding/json %q", line, m.Class, c)
		}
		key := "device"
		if m.Class == ClassDevice {
			key = "path"
		}
		if dev, ok := str(key); (ok || m.Device != "") && m.Class != ClassVersion && m.Class != ClassDevices && m.Class != ClassWatch && m.Class != ClassError {
			if dev != m.Device {
				t.Fatalf("%q: device %q, encoding/json %q", line, m.Device, dev)
			}
		}
		switch m.Class {
		case ClassTPV:
			if n, ok := num("mode"); ok != (obj["mode"] != nil) || int64(m.Mode) != n {
				t.Fatalf("%q: mode %d, encoding/json %d", line, m.Mode, n)
			}
			if raw, ok := obj["lat"]; ok {
				x, _ := strconv.ParseFloat(string(raw), 64)
				if x != m.Lat {
					t.Fatalf("%q: lat %v, encoding/json %v", line, m.Lat, x)
				}
			}
		case ClassTOFF, ClassPPS:
			rs, _ := num("real_sec")
			rn, _ := num("real_nsec")
			cs, _ := num("clock_sec")
			cn, _ := num("clock_nsec")
			if m.RealNS != rs*1e9+rn || m.ClockNS != cs*1e9+cn {
				t.Fatalf("%q: real %d clock %d", line, m.RealNS, m.ClockNS)
			}
		case ClassSKY:
			var sky struct {
				Sats []struct {
					Used bool `json:"used"`
				} `json:"satellites"`
			}
			if _, ok := obj["nSat"]; !ok && bytes.HasPrefix(obj["satellites"], []byte("[")) {
				if json.Unmarshal(line, &sky) == nil && int(m.Seen) != len(sky.Sats) {
					t.Fatalf("%q: %d seen, encoding/json %d", line, m.Seen, len(sky.Sats))
				}
			}
		default:
			if len(m.Text) > MaxText {
				t.Fatalf("text of %d bytes", len(m.Text))
			}
		}
	})
}
