package marker

import (
	"errors"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		line string
		want Marker
	}{
		{"start", Marker{Name: "start"}},
		{"start\n", Marker{Name: "start"}},
		{"start\r\n", Marker{Name: "start"}},
		{"  a.b:c/d-e_f \t value=-1.5e3  ", Marker{Name: "a.b:c/d-e_f", HasValue: true, Value: -1500}},
		{"phase value=3 mono=123456789012 rank=0 step=warmup", Marker{Name: "phase", HasValue: true, Value: 3,
			Clock: ClockMonotonic, StampNS: 123456789012, NumTags: 2, Tags: [MaxTags]Tag{{"rank", "0"}, {"step", "warmup"}}}},
		{"x rt=9223372036854775807 k=v+1:/.-_ value=0", Marker{Name: "x", HasValue: true, Clock: ClockRealtime,
			StampNS: 9223372036854775807, NumTags: 1, Tags: [MaxTags]Tag{{"k", "v+1:/.-_"}}}},
		{"_9 a=1 b=2 c=3 d=4", Marker{Name: "_9", NumTags: 4, Tags: [MaxTags]Tag{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			got, err := Parse([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			var d Decoder
			if got2, err := d.Parse([]byte(tc.line)); err != nil || got2 != tc.want {
				t.Fatalf("Decoder: %+v, %v", got2, err)
			}
		})
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	tests := []struct{ line, field, problem string }{
		{"", "line", "empty"},
		{" \n", "line", "empty"},
		{strings.Repeat("a", MaxLen+1), "line", "513 bytes"},
		{"bad!name", "name", `"bad!name"`},
		{"-x", "name", "starting with"},
		{strings.Repeat("n", MaxNameLen+1), "name", "1 to 64"},
		{"a\nb", "name", `"a\nb"`},
		{"a b", "field", `"b" is not key=value`},
		{"a value=", "value", "decimal number"},
		{"a value=0x10", "value", "not a decimal number"},
		{"a value=NaN", "value", "not a decimal number"},
		{"a value=1e999", "value", "not a finite number"},
		{"a value=1..2", "value", "not a finite number"},
		{"a value=1 value=2", "value", "given twice"},
		{"a mono=-5", "mono", "nanoseconds"},
		{"a rt=9223372036854775808", "rt", "nanoseconds"},
		{"a rt=12345678901234567890", "rt", "nanoseconds"},
		{"a mono=1 rt=2", "stamp", "one sender stamp"},
		{"a mono=1 mono=2", "stamp", "one sender stamp"},
		{"a Key=v", `tag "Key"`, "a key is"},
		{"a host=h", "tag host", "reserved"},
		{"a name=h", "tag name", "reserved"},
		{"a arrival_ns=1", "tag arrival_ns", "reserved"},
		{"a k=v,w", "tag k", `value "v,w"`},
		{"a k==", "tag k", "value"},
		{"a k=" + strings.Repeat("v", MaxTagValueLen+1), "tag k", "1 to 64"},
		{"a k=1 k=2", "tag k", "given twice"},
		{"a b=1 c=1 d=1 e=1 f=1", "tags", "more than 4"},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			_, err := Parse([]byte(tc.line))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err %v, want an *Error", err)
			}
			if e.Field != tc.field || !strings.Contains(e.Problem, tc.problem) {
				t.Fatalf("field %q problem %q, want %q containing %q", e.Field, e.Problem, tc.field, tc.problem)
			}
			if !strings.HasPrefix(err.Error(), "marker: "+tc.field+": ") {
				t.Fatalf("message %q", err)
			}
		})
	}
}

func TestAppendTextRoundTrips(t *testing.T) {
	m := Marker{Name: "phase", HasValue: true, Value: 0.1, Clock: ClockMonotonic, StampNS: 42}
	if err := m.AddTag("rank", "3"); err != nil {
		t.Fatal(err)
	}
	b, err := m.AppendText([]byte("x"))
	if err != nil || string(b) != "xphase value=0.1 mono=42 rank=3" {
		t.Fatalf("%q, %v", b, err)
	}
	if got, err := Parse(b[1:]); err != nil || got != m {
		t.Fatalf("%+v, %v", got, err)
	}
	if m.String() != "phase value=0.1 mono=42 rank=3" {
		t.Fatal(m.String())
	}
	if err := m.AddTag("rank", "4"); err == nil {
		t.Fatal("a duplicate tag was added")
	}
	for _, bad := range []Marker{
		{},
		{Name: "a", StampNS: 5},
		{Name: "a", Clock: ClockRealtime, StampNS: -1},
		{Name: "a", Clock: 9},
		{Name: "a", NumTags: 5},
		{Name: "a", NumTags: 1, Tags: [MaxTags]Tag{{"host", "x"}}},
		{Name: "a", HasValue: true, Value: posInf()},
	} {
		if b, err := bad.AppendText(nil); err == nil || len(b) != 0 {
			t.Errorf("%+v: %q, %v", bad, b, err)
		}
	}
}

func posInf() float64 { z := 0.0; return 1 / z }

// A line without tags parses without allocating through a Decoder once its
// name is known; so does one with tags seen before.
func TestDecoderDoesNotAllocate(t *testing.T) {
	var d Decoder
	for _, line := range []string{"phase value=3.25 mono=123456789012", "phase value=1 rt=5 rank=0 step=warmup"} {
		b := []byte(line)
		if _, err := d.Parse(b); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { d.Parse(b) }); n != 0 {
			t.Errorf("%q: %v allocations", line, n)
		}
	}
	b := []byte("phase value=3.25 mono=123456789012")
	if n := testing.AllocsPerRun(100, func() { Parse(b) }); n > 1 {
		t.Errorf("Parse: %v allocations, want at most 1 (the name)", n)
	}
}

func TestClockString(t *testing.T) {
	for c, s := range map[Clock]string{ClockNone: "none", ClockMonotonic: "monotonic", ClockRealtime: "realtime", 7: "clock(7)"} {
		if c.String() != s {
			t.Errorf("%d: %s", c, c)
		}
	}
}
