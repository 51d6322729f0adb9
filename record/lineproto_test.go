package record

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

func TestEncodeGolden(t *testing.T) {
	recs := []Record{
		{
			Measurement: "phc_offset",
			Tags:        []Tag{{"host", "bbb-1"}, {"device", "ptp0"}, {"clock", "realtime"}},
			Fields:      []Field{Int("offset_ns", -37000000312), Int("delay_ns", 1520), String("method", "extended"), Uint("samples", 9), Bool("ok", true), Float("rate_ppb", 12.5)},
			TimeNS:      1795000000123456789,
		},
		{
			Measurement: "odd name,x",
			Tags:        []Tag{{"k y", "v=1,2"}, {"empty", ""}},
			Fields:      []Field{String("msg", `say "hi"\`)},
			TimeNS:      -5,
		},
	}
	var e Encoder
	got, rejected, err := e.Append(nil, recs)
	if err != nil || rejected != 0 {
		t.Fatalf("rejected %d: %v", rejected, err)
	}
	want := `phc_offset,clock=realtime,device=ptp0,host=bbb-1 offset_ns=-37000000312i,delay_ns=1520i,method="extended",samples=9i,ok=true,rate_ppb=12.5 1795000000123456789
odd\ name\,x,k\ y=v\=1\,2 msg="say \"hi\"\\" -5
`
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestEncodeRejectsBadRecordsButKeepsTheRest(t *testing.T) {
	good := Record{Measurement: "m", Fields: []Field{Int("v", 1)}, TimeNS: 1}
	recs := []Record{
		good,
		{Measurement: "m", Fields: []Field{Float("v", math.NaN())}, TimeNS: 2},
		{Measurement: "m", TimeNS: 3},
		{Measurement: "m\x01", Fields: []Field{Int("v", 1)}, TimeNS: 4},
		{Measurement: "m", Tags: []Tag{{"t", "a\nb"}}, Fields: []Field{Int("v", 1)}, TimeNS: 5},
		{Measurement: "m", Fields: []Field{String("s", "\xff")}, TimeNS: 6},
		{Measurement: "m", Fields: []Field{Uint("u", math.MaxUint64)}, TimeNS: 7},
		// a key twice: InfluxDB would keep one of them (the HCA source's
		// self-metrics shipped last_error twice)
		{Measurement: "m", Fields: []Field{Int("v", 1), String("last_error", ""), String("last_error", "x")}, TimeNS: 8},
		{Measurement: "m", Tags: []Tag{{"t", "a b"}}, Fields: []Field{Int("v", 1), Int("v", 2)}, TimeNS: 9},
		good,
	}
	var e Encoder
	got, rejected, err := e.Append([]byte("prefix\n"), recs)
	if rejected != 8 {
		t.Fatalf("rejected %d, want 8 (err %v)", rejected, err)
	}
	if !strings.Contains(err.Error(), `field "last_error" given twice`) || !strings.Contains(err.Error(), `field "v" given twice`) {
		t.Fatalf("error %v does not name the repeated keys", err)
	}
	// The same series with the key list it was checked with is encoded; a
	// repeated key after it is still refused.
	if out, n, _ := e.Append(nil, []Record{good, {Measurement: "m", Fields: []Field{Int("v", 1), Int("v", 1)}, TimeNS: 10}}); n != 1 || string(out) != "m v=1i 1\n" {
		t.Fatalf("after a known series: %q, rejected %d", out, n)
	}
	if want := "prefix\nm v=1i 1\nm v=1i 1\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var re *RejectError
	if !errors.As(err, &re) || re.Index != 1 || !strings.Contains(err.Error(), "non-finite") {
		t.Fatalf("error %v does not name the first bad record", err)
	}
}

func TestEncodeDoesNotAllocate(t *testing.T) {
	recs := []Record{{
		Measurement: "clock_offset",
		Tags:        []Tag{{"host", "h"}, {"clock", "realtime"}, {"ref", "monotonic_raw"}},
		Fields:      []Field{Int("offset_ns", 123), Int("window_ns", 80), String("method", "bracket")},
		TimeNS:      1795000000000000000,
	}}
	var e Encoder
	buf := make([]byte, 0, 4096)
	if a := testing.AllocsPerRun(1000, func() { buf, _, _ = e.Append(buf[:0], recs) }); a != 0 {
		t.Fatalf("Append allocates %v times per record", a)
	}
}

func TestEncodeRejectsCommentMeasurement(t *testing.T) {
	var e Encoder
	out, rejected, err := e.Append(nil, []Record{{Measurement: "#m", Fields: []Field{Int("v", 1)}, TimeNS: 1}})
	if rejected != 1 || len(out) != 0 || err == nil {
		t.Fatalf("'#m' encoded as %q (rejected %d, %v); every reader would drop it as a comment", out, rejected, err)
	}
}

// slowAppend is the validating encoder alone, as Append was before its plain
// path.
func slowAppend(e *Encoder, buf []byte, r *Record) ([]byte, error) {
	e.enc.SetBuffer(buf)
	e.enc.SetPrecision(lineprotocol.Nanosecond)
	err := e.line(r)
	e.enc.ClearErr()
	return e.enc.Bytes(), err
}

func TestPlainMatchesEncoder(t *testing.T) {
	recs := []Record{
		{Measurement: "gpio_event", Tags: []Tag{{"chip", "gpiochip0"}, {"edge", "rising"}, {"host", "bbb-1"}, {"line", "17"}, {"name", "P9_12"}},
			Fields: []Field{Int("kernel_ns", 123456789), Int("uncertainty_ns", 250), Uint("seqno", 7), Float("x", 1.5e-7), Bool("ok", true), String("clock", "monotonic raw")},
			TimeNS: 1795000000123456789},
		{Measurement: "m", Fields: []Field{Float("f", -0.0), Bool("b", false), String("s", ""), Float("big", 1e300)}, TimeNS: -5},
		{Measurement: "m", Tags: []Tag{{"a", ""}, {"b", "x"}}, Fields: []Field{Int("i", math.MinInt64)}, TimeNS: 0},
	}
	var e Encoder
	for i := range recs {
		fast, ok := plainOnce([]byte("prefix\n"), &recs[i])
		if !ok {
			t.Fatalf("record %d not plain", i)
		}
		slow, err := slowAppend(&e, []byte("prefix\n"), &recs[i])
		if err != nil || string(fast) != string(slow) {
			t.Errorf("record %d:\nplain   %q\nencoder %q (%v)", i, fast, slow, err)
		}
	}
	// Not plain: left to the encoder, dst untouched.
	for _, r := range []Record{
		{Measurement: "a b", Fields: []Field{Int("i", 1)}},
		{Measurement: "#m", Fields: []Field{Int("i", 1)}},
		{Measurement: "m", Tags: []Tag{{"k", "v,w"}}, Fields: []Field{Int("i", 1)}},
		{Measurement: "m", Tags: []Tag{{"k", "v"}, {"k", "w"}}, Fields: []Field{Int("i", 1)}},
		{Measurement: "m", Fields: []Field{String("s", `say "hi"`)}},
		{Measurement: "m", Fields: []Field{Float("f", math.NaN())}},
		{Measurement: "m", Fields: []Field{Uint("u", math.MaxUint64)}},
		{Measurement: "m"},
		{Measurement: "mé", Fields: []Field{Int("i", 1)}},
	} {
		if out, ok := plainOnce([]byte("x"), &r); ok || string(out) != "x" {
			t.Errorf("%+v: plain %v, %q", r, ok, out)
		}
	}
}

func TestAppendMixesPlainAndEscaped(t *testing.T) {
	recs := []Record{
		{Measurement: "a", Fields: []Field{Int("i", 1)}, TimeNS: 1},
		{Measurement: "b c", Tags: []Tag{{"k", "v w"}}, Fields: []Field{String("s", `q"`)}, TimeNS: 2},
		{Measurement: "bad", Fields: []Field{Float("f", math.Inf(1))}, TimeNS: 3},
		{Measurement: "d", Fields: []Field{Bool("b", true)}, TimeNS: 4},
	}
	var e Encoder
	out, rejected, err := e.Append(nil, recs)
	want := "a i=1i 1\nb\\ c,k=v\\ w s=\"q\\\"\" 2\nd b=true 4\n"
	if string(out) != want || rejected != 1 || err == nil {
		t.Errorf("got %q, %d rejected, %v\nwant %q", out, rejected, err, want)
	}
}

// plainOnce is the plain path of a fresh encoder.
func plainOnce(dst []byte, r *Record) ([]byte, bool) {
	var e Encoder
	return e.appendPlain(dst, r)
}

// The kept series make the same bytes as a first encoding, whatever the
// order of series and field sets, and never serve a record whose series
// differs by one byte.
func TestSeriesCacheIsExact(t *testing.T) {
	var recs []Record
	for i := range 40 {
		tags := []Tag{{"chip", "gpiochip0"}, {"edge", []string{"rising", "falling"}[i%2]}, {"line", fmt.Sprint(i % 11)}}
		fields := []Field{Int("kernel_ns", int64(i)), String("clock", "monotonic")}
		if i%3 == 0 {
			fields = append(fields, Int("uncertainty_ns", 5))
		}
		if i%7 == 0 {
			fields[0].Key = "kernel ns" // needs escaping: the encoder's
		}
		recs = append(recs, Record{Measurement: "gpio_event", Tags: tags, Fields: fields, TimeNS: int64(i)})
	}
	var cached Encoder
	var out []byte
	for i := range 3 * len(recs) {
		r := recs[(i*7)%len(recs)]
		var fresh Encoder
		want, _, _ := fresh.Append(nil, []Record{r})
		n := len(out)
		out, _, _ = cached.Append(out, []Record{r})
		if got := out[n:]; string(got) != string(want) {
			t.Fatalf("record %d: kept series wrote %q, a fresh encoder %q", i, got, want)
		}
	}
}

// A caller that reuses one tag slice for another series gets that series:
// the kept entry is confirmed by content, not by where the tags are.
func TestSeriesCacheFollowsReusedTagSlice(t *testing.T) {
	tags := []Tag{{"chip", "a"}, {"line", "1"}}
	var e Encoder
	out, _, _ := e.Append(nil, []Record{{Measurement: "m", Tags: tags, Fields: []Field{Int("v", 1)}, TimeNS: 1}})
	tags[1].Value = "2"
	out, _, _ = e.Append(out, []Record{{Measurement: "m", Tags: tags, Fields: []Field{Int("v", 2)}, TimeNS: 2}})
	if want := "m,chip=a,line=1 v=1i 1\nm,chip=a,line=2 v=2i 2\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
