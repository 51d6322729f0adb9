package marker

import "testing"

// FuzzParse: no input panics, and anything that parses writes a line that
// parses to the same marker.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"start", "start\n", "phase value=3 mono=123456789012 rank=0 step=warmup",
		"request_done value=0.0042 rt=1700000000123456789 route=/api/v1",
		"a value=-0 b=1 c=2 d=3 e=4", "a value=1e-400", "a rt=9223372036854775807", "a k=v k=w",
		"a\tvalue=.5e+3\r\n", "x mono=1 rt=2",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		var d Decoder
		if m2, err := d.Parse(b); err != nil || m2 != m {
			t.Fatalf("Decoder: %+v, %v; Parse: %+v", m2, err, m)
		}
		line, err := m.AppendText(nil)
		if err != nil {
			t.Fatalf("%q parsed to %+v, which does not validate: %v", b, m, err)
		}
		if len(line) > MaxLen {
			t.Fatalf("%q re-encodes to %d bytes", b, len(line))
		}
		m2, err := Parse(line)
		if err != nil {
			t.Fatalf("%q re-encodes to %q: %v", b, line, err)
		}
		if m2 != m {
			t.Fatalf("%q: %+v re-encodes to %q: %+v", b, m, line, m2)
		}
	})
}
