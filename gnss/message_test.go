package gnss

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/decoded.golden")

// describe is a message as one line of text, every member its class has.
func describe(m *Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s device=%q", m.Class, m.Device)
	switch m.Class {
	case ClassTPV:
		fmt.Fprintf(&b, " mode=%d", m.Mode)
		if m.Has&HasTime != 0 {
			fmt.Fprintf(&b, " time_ns=%d", m.TimeNS)
		}
		if m.Has&HasEpt != 0 {
			fmt.Fprintf(&b, " ept_ns=%d", m.EptNS)
		}
		if m.Has&HasLat != 0 {
			fmt.Fprintf(&b, " lat=%.9f", m.Lat)
		}
		if m.Has&HasLon != 0 {
			fmt.Fprintf(&b, " lon=%.9f", m.Lon)
		}
		if m.Has&HasAlt != 0 {
			fmt.Fprintf(&b, " alt_m=%.4f", m.AltM)
		}
	case ClassSKY:
		if m.Has&HasSeen != 0 {
			fmt.Fprintf(&b, " seen=%d", m.Seen)
		}
		if m.Has&HasUsed != 0 {
			fmt.Fprintf(&b, " used=%d", m.Used)
		}
	case ClassTOFF, ClassPPS:
		fmt.Fprintf(&b, " real_ns=%d clock_ns=%d offset_ns=%d", m.RealNS, m.ClockNS, m.OffsetNS())
		if m.Has&HasPrecision != 0 {
			fmt.Fprintf(&b, " precision=%d", m.Precision)
		}
		if m.Has&HasQErr != 0 {
			fmt.Fprintf(&b, " qerr_ps=%d", m.QErrPS)
		}
	default:
		fmt.Fprintf(&b, " text=%d bytes", len(m.Text))
	}
	return b.String()
}

// goldenLines are the lines of the testdata captures.
func goldenLines(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range []string{"gpsd-3.22-gpsfake.jsonl", "gpsd_json5-pps.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, MaxLine)
		for sc.Scan() {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	return out
}

// Every line gpsd 3.22 sent under gpsfake, and the manual's PPS lines,
// decode to what decoded.golden says.
func TestGoldenLinesOfGpsd(t *testing.T) {
	var d Decoder
	var got strings.Builder
	for _, line := range goldenLines(t) {
		var m Message
		if err := d.Decode(line, &m); err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		got.WriteString(describe(&m) + "\n")
	}
	path := filepath.Join("testdata", "decoded.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("decoded lines differ from %s:\n%s", path, got.String())
	}
}

// The members a time monitor needs, spelled out for one line of each class.
func TestGnssDecodeMembers(t *testing.T) {
	var d Decoder
	for _, tc := range []struct {
		line string
		want Message
	}{
		{`{"class":"TPV","device":"/dev/pts/3","mode":3,"time":"2026-11-25T09:12:36.000Z","ept":0.005,"lat":48.117300000,"lon":11.516666667,"altHAE":592.3000,"alt":545.4}`,
			Message{Class: ClassTPV, Device: "/dev/pts/3", Mode: 3, TimeNS: 1795597956_000_000_000, EptNS: 5_000_000, Lat: 48.1173, Lon: 11.516666667, AltM: 592.3,
				Has: HasTime | HasEpt | HasLat | HasLon | HasAlt}},
		{`{"class":"TPV","device":"/dev/x","mode":1,"time":"2024-02-29T23:59:60.123456789123Z","ept":1.5e-3}`,
			Message{Class: ClassTPV, Device: "/dev/x", Mode: 1, TimeNS: 1709251200_123_456_789, EptNS: 1_500_000, Has: HasTime | HasEpt}},
		{`{"class":"TPV","mode":0}`, Message{Class: ClassTPV}},
		{`{"class":"SKY","device":"/dev/x","satellites":[{"PRN":1,"used":true},{"PRN":2,"used":false},{"PRN":3,"used":true}]}`,
			Message{Class: ClassSKY, Device: "/dev/x", Seen: 3, Used: 2, Has: HasSeen | HasUsed}},
		{`{"class":"SKY","device":"/dev/x","nSat":12,"uSat":9,"satellites":[]}`,
			Message{Class: ClassSKY, Device: "/dev/x", Seen: 12, Used: 9, Has: HasSeen | HasUsed}},
		{`{"class":"SKY","hdop":0.9}`, Message{Class: ClassSKY}},
		{`{"class":"PPS","device":"/dev/ttyS0","real_sec":1795597791, "real_nsec":0,"clock_sec":1795597790,"clock_nsec":999998457,"precision":-20,"qErr":-2150}` + "\r",
			Message{Class: ClassPPS, Device: "/dev/ttyS0", RealNS: 1795597791e9, ClockNS: 1795597790_999_998_457, Precision: -20, QErrPS: -2150, Has: HasPrecision | HasQErr}},
		{`{"class":"TOFF","device":"\/dev\/pts\/1","real_sec":1,"real_nsec":999999999,"clock_sec":0,"clock_nsec":0}`,
			Message{Class: ClassTOFF, Device: "/dev/pts/1", RealNS: 1_999_999_999}},
	} {
		var m Message
		if err := d.Decode([]byte(tc.line), &m); err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if m != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.line, m, tc.want)
		}
	}
	var m Message
	d.Decode([]byte(`{"class":"PPS","real_sec":10,"real_nsec":0,"clock_sec":9,"clock_nsec":999999000}`), &m)
	if m.OffsetNS() != -1000 {
		t.Errorf("offset %d, want clock − real = -1000 ns", m.OffsetNS())
	}
}

// Lines that are not messages say why, as ErrGarbage; well-formed ones of
// other classes are ErrUnknownClass.
func TestGnssDecodeRefuses(t *testing.T) {
	var d Decoder
	for _, tc := range []struct {
		line string
		want error
		why  string
	}{
		{``, ErrGarbage, "not a JSON object"},
		{`$GPRMC,091232.00,V,,,,,,,251126,,,N*75`, ErrGarbage, "not a JSON object"},
		{`{"class":"TPV","mode":3`, ErrGarbage, "missing ',' or '}'"},
		{`{"class":"TPV"} {}`, ErrGarbage, "text after the object"},
		{`{"mode":3}`, ErrGarbage, "no class"},
		{`{"class":3}`, ErrGarbage, "class is no string"},
		{`{"class":"TPV","mode":4}`, ErrGarbage, "mode"},
		{`{"class":"TPV","mode":3.0}`, ErrGarbage, "mode"},
		{`{"class":"TPV","time":"2026-02-30T00:00:00Z"}`, ErrGarbage, "out of range"},
		{`{"class":"TPV","time":"2026-11-25 09:12:36Z"}`, ErrGarbage, "YYYY"},
		{`{"class":"TPV","ept":"x"}`, ErrGarbage, "ept"},
		{`{"class":"TOFF","real_sec":1.5,"real_nsec":0,"clock_sec":1,"clock_nsec":0}`, ErrGarbage, "real_sec"},
		{`{"class":"PPS","real_sec":1,"real_nsec":1000000000,"clock_sec":1,"clock_nsec":0}`, ErrGarbage, "nanoseconds"},
		{`{"class":"PPS","real_sec":1,"real_nsec":0,"clock_sec":1}`, ErrGarbage, "missing"},
		{`{"class":"TPV","lat":01}`, ErrGarbage, "missing"},
		{`{"class":"TPV","lat":-}`, ErrGarbage, "malformed number"},
		{`{"class":"TPV","lat":1e999}`, ErrGarbage, "lat"},
		{`{"class":"TPV","device":"a` + "\x01" + `"}`, ErrGarbage, "malformed string"},
		{`{"class":"GST","device":"/dev/x","rms":1.2}`, ErrUnknownClass, `"GST"`},
	} {
		var m Message
		err := d.Decode([]byte(tc.line), &m)
		var le *LineError
		if !errors.Is(err, tc.want) || !errors.As(err, &le) || !strings.Contains(err.Error(), tc.why) || !strings.HasPrefix(err.Error(), "gpsd line: ") {
			t.Errorf("%q: %v, want %v naming %q", tc.line, err, tc.want, tc.why)
		}
	}
}

// A decoded TPV, SKY, TOFF or PPS line of a device seen before allocates
// nothing.
func TestGnssDecodeAllocatesNothing(t *testing.T) {
	var d Decoder
	var m Message
	for _, line := range goldenLines(t) {
		d.Decode(line, &m)
		if m.Class.Logged() {
			continue
		}
		if n := testing.AllocsPerRun(20, func() { d.Decode(line, &m) }); n != 0 {
			t.Errorf("%s: %.0f allocations", line[:min(len(line), 60)], n)
		}
	}
}

func TestParseTimeAgainstTheCalendar(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int64
	}{
		{"1970-01-01T00:00:00Z", 0},
		{"1970-01-01T00:00:00.5Z", 500_000_000},
		{"2000-02-29T12:00:00.000001Z", 951825600_000_001_000},
		{"2261-12-31T23:59:59.999999999Z", 9214646399_999_999_999},
	} {
		if got, err := ParseTime([]byte(tc.s)); err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.s, got, err, tc.want)
		}
	}
	for _, s := range []string{"1969-12-31T23:59:59Z", "2262-01-01T00:00:00Z", "2026-11-25T09:12:36.Z", "2026-11-25T09:12:36", "2026-13-01T00:00:00Z", "2026-11-25T24:00:00Z", "2026-11-25T09:12:36.12aZ"} {
		if _, err := ParseTime([]byte(s)); err == nil {
			t.Errorf("%s: no error", s)
		}
	}
}
