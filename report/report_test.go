package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/stats"
)

// collect reads line protocol lp with query q and computes every series.
func collect(t *testing.T, lp string, q Query, o Options) ([]*Series, []*Result, *Collector, error) {
	t.Helper()
	c, err := NewCollector(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ReadLineProtocol(strings.NewReader(lp)); err != nil {
		return nil, nil, c, err
	}
	ss, err := c.Finish()
	if err != nil {
		return nil, nil, c, err
	}
	var rs []*Result
	for _, s := range ss {
		r, err := Compute(s, o)
		if err != nil {
			return ss, nil, c, err
		}
		rs = append(rs, r)
	}
	return ss, rs, c, nil
}

func lines(vals ...int64) string {
	var b strings.Builder
	for i, v := range vals {
		fmt.Fprintf(&b, "clock_offset,clock=realtime,ref=ptp0 offset_ns=%di,window_ns=5i %d\n", v, 1_700_000_000_000_000_000+int64(i)*1e9)
	}
	return b.String()
}

var q0 = Query{Measurement: "clock_offset", Field: "offset_ns"}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// TestKnownSeriesJSON: six samples 1 s apart with hand-computed (NIST SP 1065
// formulas, evaluated independently) statistics, through the JSON output.
func TestKnownSeriesJSON(t *testing.T) {
	_, rs, _, err := collect(t, lines(3, 14, -7, 20, 9, 1), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rs); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d series, want 1:\n%s", len(got), buf.String())
	}
	g := got[0]
	if s := g["series"].(map[string]any); s["clock"] != "realtime" || s["ref"] != "ptp0" || len(s) != 2 {
		t.Errorf("series = %v", s)
	}
	want := map[string]float64{"n": 6, "mean_ns": 6.666666666666667, "std_ns": 9.688481133111972, "rms_ns": 11.075498483890767,
		"max_abs_ns": 20, "p50_ns": 6, "p75_ns": 12.75, "p95_ns": 18.5, "p99_ns": 19.700000000000003, "p999_ns": 19.97,
		"drift_ppm": 5.714285714285714e-05, "abs_p75_ns": 12.75, "abs_p95_ns": 18.5, "abs_p99_ns": 19.700000000000003,
		"tau0_ns": 1e9, "segment_n": 6}
	for k, w := range want {
		v, ok := g[k].(float64)
		if !ok || !near(v, w) {
			t.Errorf("%s = %v, want %v", k, g[k], w)
		}
	}
	curves := map[string][][2]float64{
		"adev": {{1, 2.444636987366427e-08}, {2, 9.017344398435717e-09}},
		"mdev": {{1, 2.444636987366427e-08}, {2, 1.767766952966369e-10}},
		"tdev": {{1, 14.114118227269225}, {2, 0.20412414523193154}},
		"mtie": {{1, 27}, {2, 27}, {4, 27}},
	}
	for k, w := range curves {
		pts := g[k].([]any)
		if len(pts) != len(w) {
			t.Errorf("%s has %d points, want %d: %v", k, len(pts), len(w), pts)
			continue
		}
		for i, p := range pts {
			m := p.(map[string]any)
			if m["tau_s"].(float64) != w[i][0] || !near(m["value"].(float64), w[i][1]) {
				t.Errorf("%s[%d] = %v, want tau %g value %g", k, i, m, w[i][0], w[i][1])
			}
		}
	}
	for _, k := range []string{"series", "n", "mean_ns", "std_ns", "rms_ns", "max_abs_ns", "p50_ns", "p75_ns", "p95_ns", "p99_ns", "p999_ns", "drift_ppm", "adev", "mdev", "tdev", "mtie"} {
		if _, ok := g[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

// TestFarOffsets: offsets near 1.8e18 ns (a clock against MONOTONIC_RAW) keep
// their nanosecond spread, drift and stability.
func TestFarOffsets(t *testing.T) {
	const base = 1_795_441_577_511_580_000
	_, near0, _, err := collect(t, lines(3, 14, -7, 20, 9, 1), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, far, _, err := collect(t, lines(base+3, base+14, base-7, base+20, base+9, base+1), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := near0[0], far[0]
	if !near(a.StdNS, b.StdNS) || !near(*a.DriftPPM, *b.DriftPPM) || !near(a.ADev[0].Value, b.ADev[0].Value) || !reflect.DeepEqual(a.MTIE[0], b.MTIE[0]) {
		t.Errorf("shifted series differs: std %v/%v drift %v/%v adev %v/%v", a.StdNS, b.StdNS, *a.DriftPPM, *b.DriftPPM, a.ADev, b.ADev)
	}
	if b.MaxAbsNS != base+20 || b.MeanNS.Base != base+3 || !near(b.MeanNS.Rel, a.MeanNS.Rel-3) { // relative to the first
		t.Errorf("max |x| %d mean %+v", b.MaxAbsNS, b.MeanNS)
	}
}

// TestFarOffsetsPrintedExactly (issue 21 item 8): no statistic of a series
// far from zero prints a value float64 cannot hold. The JSON's location
// statistics are exact integers (the value near zero rounded, plus the base),
// its "relative" object holds them relative to base_ns with their fractions,
// and the tables print them relative to b, the first value, which a note
// gives exactly. Near-zero series are their reference: the same samples less
// the base. Both signs: |x| is relative to |b|.
func TestFarOffsetsPrintedExactly(t *testing.T) {
	vals := []int64{0, 14, -7, 20, 9, 1, 31, 3} // the first is 0: b is the base
	_, near0, _, err := collect(t, lines(vals...), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, negNear, _, err := collect(t, lines(neg(vals)...), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// realtime − monotonic_raw of a board booted in 2026: float64 holds
	// it to 256 ns, so 1795567471826515523 and its neighbours print as
	// 1795567471826515500 with encoding/json.
	const base = 1_795_567_471_826_515_523
	for _, tc := range []struct {
		name    string
		base    int64
		rel     []int64 // x - b
		ref     *Result // of rel
		absRef  *Result // of |x| - |b|: the signed percentiles of vals
		b, absB string
	}{
		{"positive", base, vals, near0[0], near0[0], "b", "b"},
		{"negative", -base, neg(vals), negNear[0], near0[0], "b", "|b|"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			far := make([]int64, len(tc.rel))
			for i, v := range tc.rel {
				far[i] = tc.base + v
			}
			_, rs, _, err := collect(t, lines(far...), q0, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var js bytes.Buffer
			if err := WriteJSON(&js, rs); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(js.Bytes()))
			dec.UseNumber()
			var got []map[string]any
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			g, ref := got[0], tc.ref
			off := func(v NS) float64 { return v.Rel }
			absOff := off
			exact := func(base int64, rel float64) string {
				return new(big.Int).Add(big.NewInt(base), big.NewInt(int64(math.Round(rel)))).String()
			}
			absBase := tc.base
			if absBase < 0 {
				absBase = -absBase
			}
			want := map[string]string{
				"mean_ns": exact(tc.base, off(ref.MeanNS)), "p50_ns": exact(tc.base, off(ref.P50NS)), "p75_ns": exact(tc.base, off(ref.P75NS)),
				"p95_ns": exact(tc.base, off(ref.P95NS)), "p99_ns": exact(tc.base, off(ref.P99NS)), "p999_ns": exact(tc.base, off(ref.P999NS)),
				"abs_p75_ns": exact(absBase, absOff(tc.absRef.P75NS)), "abs_p95_ns": exact(absBase, absOff(tc.absRef.P95NS)),
				"abs_p99_ns": exact(absBase, absOff(tc.absRef.P99NS)),
				"min_ns":     exact(tc.base, float64(ref.MinNS)), "max_ns": exact(tc.base, float64(ref.MaxNS)),
				"base_ns": fmt.Sprint(tc.base),
			}
			for k, w := range want {
				if n, ok := g[k].(json.Number); !ok || n.String() != w {
					t.Errorf("%s = %v, want %s", k, g[k], w)
				}
			}
			if g["p50_ns"] == g["p999_ns"] || g["p50_ns"] == g["mean_ns"] {
				t.Errorf("mean %v, p50 %v and p999 %v: not their own values", g["mean_ns"], g["p50_ns"], g["p999_ns"])
			}
			if g["base_ns_str"] != fmt.Sprint(tc.base) {
				t.Errorf("base_ns_str = %v", g["base_ns_str"])
			}
			rel, _ := g["relative"].(map[string]any)
			for k, w := range map[string]float64{"mean_ns": off(ref.MeanNS), "p50_ns": off(ref.P50NS), "p999_ns": off(ref.P999NS),
				"abs_p95_ns": absOff(tc.absRef.P95NS), "min_ns": float64(ref.MinNS)} {
				n, _ := rel[k].(json.Number)
				if v, err := n.Float64(); err != nil || !near(v, w) {
					t.Errorf("relative %s = %v, want %v", k, rel[k], w)
				}
			}
			// RMS = |mean| + var/(|mean| + RMS): at 1.8e18 ns it is |mean|.
			if n, _ := rel["rms_ns"].(json.Number); n.String() == "" || math.Abs(must(n.Float64())-math.Abs(off(ref.MeanNS))) > 1e-6 {
				t.Errorf("relative rms_ns = %v, |mean| - |b| = %v", rel["rms_ns"], math.Abs(off(ref.MeanNS)))
			}
			// A Go reader gets the exact values back.
			var back []Result
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if back[0].MeanNS.Int().String() != want["mean_ns"] || back[0].P999NS.Int().String() != want["p999_ns"] {
				t.Errorf("read back: mean %v p999 %v", back[0].MeanNS, back[0].P999NS)
			}

			var tx, md bytes.Buffer
			WriteText(&tx, rs)
			WriteMarkdown(&md, rs)
			cell := func(b string, v float64) string {
				s := stats.FormatNS(v)
				if v >= 0 {
					s = "+" + s
				}
				return b + s
			}
			for _, w := range []string{"  " + cell(tc.b, off(ref.MeanNS)) + "  ", "  " + cell(tc.absB, absOff(tc.absRef.P99NS)) + "  ",
				fmt.Sprintf("b = %d ns, the first value", tc.base)} {
				if !strings.Contains(tx.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, tx.String())
				}
			}
			if w := "| " + cell(tc.b, off(ref.MeanNS)) + " |"; !strings.Contains(md.String(), w) {
				t.Errorf("markdown lacks %q:\n%s", w, md.String())
			}
			if strings.Contains(tx.String(), "e+") || strings.Contains(md.String(), "e+") {
				t.Errorf("a table prints a float64 of the offsets:\n%s\n%s", tx.String(), md.String())
			}
		})
	}
}

func neg(v []int64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}

func must(v float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return v
}

// TestBadInputs: each documented handling of bad input.
func TestBadInputs(t *testing.T) {
	at := func(i int) int64 { return 1_700_000_000_000_000_000 + int64(i)*1e9 }
	t.Run("empty", func(t *testing.T) {
		_, _, _, err := collect(t, "", q0, Options{})
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "0 records read") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing field", func(t *testing.T) {
		_, _, _, err := collect(t, lines(1, 2, 3), Query{Measurement: "clock_offset", Field: "nope"}, Options{})
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "3 without the field") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("other measurement", func(t *testing.T) {
		_, _, _, err := collect(t, lines(1, 2, 3), Query{Measurement: "phc_offset", Field: "offset_ns"}, Options{})
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), `none of measurement "phc_offset"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("NaN and Inf are malformed line protocol", func(t *testing.T) {
		lp := lines(3, 14, -7) + fmt.Sprintf("clock_offset,clock=realtime,ref=ptp0 offset_ns=NaN %d\nclock_offset,clock=realtime,ref=ptp0 offset_ns=+Inf %d\n", at(3), at(4))
		_, rs, c, err := collect(t, lp, q0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].N != 3 || c.Counts.Malformed != 2 || !strings.Contains(c.FirstMalformed(), "line 4") {
			t.Errorf("n %d malformed %d first %q", rs[0].N, c.Counts.Malformed, c.FirstMalformed())
		}
	})
	t.Run("NaN and Inf values are skipped and counted", func(t *testing.T) {
		c, _ := NewCollector(q0)
		tags := func() []Tag { return []Tag{{"clock", "realtime"}} }
		c.Add(tags(), true, Value{Kind: KindFloat, Float: 2.5}, at(0), true)
		c.Add(tags(), true, Value{Kind: KindFloat, Float: math.NaN()}, at(1), true)
		c.Add(tags(), true, Value{Kind: KindFloat, Float: math.Inf(-1)}, at(2), true)
		c.Add(tags(), true, Value{Kind: KindFloat, Float: -2.5}, at(3), true)
		ss, err := c.Finish()
		if err != nil {
			t.Fatal(err)
		}
		// floats round half away from zero
		if s := ss[0]; len(s.X) != 2 || s.X[0] != 3 || s.X[1] != -3 || s.NonFinite != 2 || c.Counts.NonFinite != 2 {
			t.Errorf("x %v nonfinite %d", s.X, s.NonFinite)
		}
		r, _ := Compute(ss[0], Options{})
		if !strings.Contains(strings.Join(r.Notes, ";"), "2 NaN or infinite values skipped") {
			t.Errorf("notes %v", r.Notes)
		}
	})
	t.Run("unsorted", func(t *testing.T) {
		lp := strings.Split(strings.TrimSpace(lines(3, 14, -7, 20, 9, 1)), "\n")
		lp[1], lp[4] = lp[4], lp[1]
		_, rs, _, err := collect(t, strings.Join(lp, "\n"), q0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, want, _, _ := collect(t, lines(3, 14, -7, 20, 9, 1), q0, Options{})
		if rs[0].Unsorted == 0 || !near(rs[0].StdNS, want[0].StdNS) || !near(*rs[0].DriftPPM, *want[0].DriftPPM) || !reflect.DeepEqual(rs[0].ADev[0], want[0].ADev[0]) {
			t.Errorf("unsorted input gives %+v, want %+v", rs[0], want[0])
		}
	})
	t.Run("a point written again keeps the last, as InfluxDB does", func(t *testing.T) {
		lp := lines(3, 14, -7) + fmt.Sprintf("clock_offset,clock=realtime,ref=ptp0 offset_ns=1000i %d\n", at(1))
		ss, rs, c, err := collect(t, lp, q0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ss[0].X; len(got) != 3 || got[1] != 1000 || rs[0].Dups != 1 || c.Counts.Duplicates != 1 {
			t.Errorf("x %v dups %d", got, rs[0].Dups)
		}
		if n := strings.Join(rs[0].Notes, ";"); !strings.Contains(n, "1 record of a point written again") || !strings.Contains(n, "the last kept") {
			t.Errorf("notes %q", n)
		}
	})
	t.Run("single sample", func(t *testing.T) {
		_, rs, _, err := collect(t, lines(-42), q0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := rs[0]
		if r.N != 1 || r.MeanNS != (NS{Rel: -42}) || r.StdNS != 0 || r.MaxAbsNS != 42 || r.P99NS != (NS{Rel: -42}) || r.DriftPPM != nil || len(r.ADev) != 0 || len(r.Notes) == 0 {
			t.Errorf("%+v", r)
		}
		var b bytes.Buffer
		WriteText(&b, rs)
		if !strings.Contains(b.String(), "a single sample") {
			t.Errorf("text lacks the note:\n%s", b.String())
		}
		WriteJSON(&b, rs)
		if !strings.Contains(b.String(), `"drift_ppm": null`) || !strings.Contains(b.String(), `"adev": []`) {
			t.Errorf("json:\n%s", b.String())
		}
	})
	t.Run("too short for tau", func(t *testing.T) {
		_, rs, _, err := collect(t, lines(1, 5), q0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r := rs[0]; len(r.ADev) != 0 || len(r.MTIE) != 1 || r.DriftPPM != nil || !strings.Contains(strings.Join(r.Notes, ";"), "adev: the longest regular segment (2 samples) is too short") {
			t.Errorf("%+v", r)
		}
	})
	t.Run("mixed clock domains", func(t *testing.T) {
		lp := lines(1, 2) + strings.ReplaceAll(lines(3, 4), "clock=realtime", "clock=tai")
		_, _, _, err := collect(t, lp, Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"ref"}}, Options{})
		if err == nil || !strings.Contains(err.Error(), "series {ref=ptp0} mixes clock domains clock=realtime and clock=tai: add --group-by clock") {
			t.Errorf("err = %v", err)
		}
		_, rs, _, err := collect(t, lp, Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"ref", "clock"}}, Options{})
		if err != nil || len(rs) != 2 {
			t.Errorf("grouped by clock: %v, %d series", err, len(rs))
		}
	})
	t.Run("string field", func(t *testing.T) {
		_, _, c, err := collect(t, `clock_offset,clock=a offset_ns="x" 1`+"\n", q0, Options{})
		if !errors.Is(err, ErrNoData) || c.Counts.NonNumeric != 1 {
			t.Errorf("err %v, non-numeric %d", err, c.Counts.NonNumeric)
		}
	})
}

// TestWhereGroupByAndGaps: --where filters, --group-by merges, and a gap
// leaves the stability measures to the longest regular segment.
func TestWhereGroupByAndGaps(t *testing.T) {
	lp := lines(1, 2, 3, 4) + strings.ReplaceAll(lines(10, 20), "ref=ptp0", "ref=ptp1")
	_, rs, _, err := collect(t, lp, Query{Measurement: "clock_offset", Field: "offset_ns", Where: []Tag{{"ref", "ptp1"}}}, Options{})
	if err != nil || len(rs) != 1 || rs[0].N != 2 || rs[0].Series["ref"] != "ptp1" {
		t.Fatalf("where: %v %+v", err, rs)
	}
	var b strings.Builder
	for i, v := range []int64{5, 6, 7, 8, 9, 10, 11, 12} {
		ts := 1_700_000_000_000_000_000 + int64(i)*1e9
		if i >= 3 {
			ts += 10e9 // a 10 s gap after the third sample
		}
		fmt.Fprintf(&b, "clock_offset,clock=realtime,host=h%d offset_ns=%di %d\n", i%2, v, ts)
	}
	_, rs, _, err = collect(t, b.String(), Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"clock"}}, Options{})
	if err != nil || len(rs) != 1 {
		t.Fatal(err, rs)
	}
	if r := rs[0]; r.N != 8 || r.Segments != 2 || r.SegmentN != 5 || r.Tau0NS != 1e9 || len(r.Series) != 1 {
		t.Errorf("%+v", r)
	}
}

func TestProgressLine(t *testing.T) {
	c, _ := NewCollector(q0)
	var b bytes.Buffer
	c.Progress, c.Source = &b, "big.lp"
	c.start = time.Now().Add(-2 * time.Second)
	c.last = c.start
	if err := c.ReadLineProtocol(strings.NewReader(strings.Repeat("other f=1i 1\n", 5000))); err != nil {
		t.Fatal(err)
	}
	if b.String() != "read 4096 records from big.lp...\n" {
		t.Errorf("progress %q", b.String())
	}
}

func TestParseTimeAndBounds(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]int64{"": 0, "-1h": now.Add(-time.Hour).UnixNano(), "2026-01-01T00:00:00Z": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()} {
		if got, err := ParseTime(in, now); err != nil || got != want {
			t.Errorf("ParseTime(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Error("ParseTime accepts yesterday")
	}
	if b, err := ParseBounds("100ns,1us,1ms"); err != nil || fmt.Sprint(b) != "[100 1000 1000000]" {
		t.Errorf("ParseBounds = %v, %v", b, err)
	}
	if roundSignificant(1_000_336_414, 3) != 1e9 || roundSignificant(7, 3) != 7 || roundSignificant(125_400, 3) != 125_000 {
		t.Error("roundSignificant")
	}
}

func TestTextAndMarkdown(t *testing.T) {
	_, rs, _, err := collect(t, lines(3, 14, -7, 20, 9, 1), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tx, md bytes.Buffer
	WriteText(&tx, rs)
	WriteMarkdown(&md, rs)
	wantText := "series                   n  µ         σ         |x| p75   |x| p95  |x| p99  max |x|  ADEV ±1σ @τ         drift ±95 %       ≤100 ns  ≤1 µs  ≤10 µs  ≤100 µs  ≤1 ms\n" +
		"clock=realtime,ref=ptp0  6  6.667 ns  9.688 ns  12.75 ns  18.5 ns  19.7 ns  20 ns    2.44e-8 ±50 % @1 s  0.05714 ±7.2 ppb  100 %    100 %  100 %   100 %    100 %\n"
	if tx.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", tx.String(), wantText)
	}
	if !strings.HasPrefix(md.String(), "| series | n | µ | σ | \\|x\\| p75 |") || !strings.Contains(md.String(), "| clock=realtime,ref=ptp0 | 6 | 6.667 ns |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// TestTablesShowTheShares (issue 21 item 13): --bounds changes the text
// and markdown tables, not only the JSON: a column per bound with the share
// of |x| within it, never rounded to 0 % or 100 % when it is not.
func TestTablesShowTheShares(t *testing.T) {
	// 100000 samples: one within 0 ns, six beyond 2 ns, one beyond 15 ns
	vals := []int64{0, 14, -7, 20, 9, 5, 3}
	for len(vals) < 100_000 {
		vals = append(vals, 1)
	}
	_, rs, _, err := collect(t, lines(vals...), q0, Options{Bounds: []int64{0, 2, 15, 20}})
	if err != nil {
		t.Fatal(err)
	}
	var tx, md bytes.Buffer
	WriteText(&tx, rs)
	WriteMarkdown(&md, rs)
	head, row, _ := strings.Cut(tx.String(), "\n")
	for _, w := range []string{"≤0 ns", "≤2 ns", "≤15 ns", "≤20 ns"} {
		if !strings.Contains(head, w) || !strings.Contains(md.String(), " "+w+" |") {
			t.Errorf("a table lacks the column %q:\n%s\n%s", w, tx.String(), md.String())
		}
	}
	// 1 of 100000 is not 0 %, 99999 not 100 %
	if !strings.HasSuffix(row, "  <0.01 %  99.99 %  >99.99 %  100 %\n") {
		t.Errorf("shares:\n%s", tx.String())
	}
	if !strings.Contains(md.String(), "| <0.01 % | 99.99 % | >99.99 % | 100 % |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	_, one, _, _ := collect(t, lines(vals...), q0, Options{Bounds: []int64{1_000_000}})
	tx.Reset()
	WriteText(&tx, one)
	if strings.Contains(tx.String(), "≤10 ns") || !strings.Contains(tx.String(), "≤1 ms") {
		t.Errorf("other bounds, same table:\n%s", tx.String())
	}
}

func TestWritePlots(t *testing.T) {
	if !PlotsBuilt {
		if _, err := WritePlots(t.TempDir(), "x", nil, nil); !errors.Is(err, ErrNoPlots) {
			t.Fatalf("WritePlots in a build without plots: %v, want ErrNoPlots", err)
		}
		t.Skip("this build has no plots (32-bit ARM): WritePlots says so")
	}
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "clock_offset,clock=realtime offset_ns=%di %d\n", (i*7919)%301-150+i, 1_700_000_000_000_000_000+int64(i)*1e9)
	}
	ss, rs, _, err := collect(t, b.String(), q0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, "clock_offset_offset_ns", ss[0], rs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 10 {
		t.Errorf("%d files: %v", len(files), files)
	}
	for _, f := range files {
		if filepath.Ext(f) != ".png" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
			t.Errorf("%s is %v", f, b)
		}
	}
}

// influxHandler serves /query as InfluxDB 1.8 does, checking the request.
func influxHandler(t *testing.T, body string, status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		u, p, _ := r.BasicAuth()
		if r.URL.Path != "/query" || q.Get("db") != "mon" || q.Get("rp") != "autogen" || q.Get("epoch") != "ns" || q.Get("chunked") != "true" || u != "user" || p != "pass" {
			t.Errorf("request %s %v auth %s:%s", r.URL.Path, q, u, p)
		}
		if want := `SELECT "offset_ns" FROM "clock_offset" WHERE time >= 1 AND time <= 2000000000000000000 AND "clock" = 'realtime' GROUP BY *`; q.Get("q") != want {
			t.Errorf("q = %s\nwant %s", q.Get("q"), want)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func TestInfluxQuery(t *testing.T) {
	q := Query{Measurement: "clock_offset", Field: "offset_ns", Where: []Tag{{"clock", "realtime"}}, Start: 1, Stop: 2e18}
	body := `{"results":[{"statement_id":0,"series":[
{"name":"clock_offset","tags":{"clock":"realtime","host":"","ref":"ptp0"},"columns":["time","offset_ns"],
 "values":[[1700000000000000000,3],[1700000001000000000,14],[1700000002000000000,-7]],"partial":true}],"partial":true}]}
{"results":[{"statement_id":0,"series":[{"name":"clock_offset","tags":{"clock":"realtime","host":"","ref":"ptp0"},"columns":["time","offset_ns"],
 "values":[[1700000003000000000,20],[1700000004000000000,9],[1700000005000000000,1.4]]}]}]}`
	srv := httptest.NewServer(influxHandler(t, body, 200))
	defer srv.Close()
	c, _ := NewCollector(q)
	if err := c.ReadInflux(context.Background(), Influx{URL: srv.URL, Bucket: "mon/autogen", Token: "user:pass"}); err != nil {
		t.Fatal(err)
	}
	ss, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := Compute(ss[0], Options{})
	_, want, _, _ := collect(t, lines(3, 14, -7, 20, 9, 1), q0, Options{})
	if len(r.Series) != 2 || r.Series["ref"] != "ptp0" || !near(r.StdNS, want[0].StdNS) || !near(r.ADev[0].Value, want[0].ADev[0].Value) {
		t.Errorf("%+v", r)
	}

	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"error":"authorization failed"}`, 401, "HTTP 401: authorization failed (check --token user:pass)"},
		{`{"error":"database not found: mon"}`, 404, "HTTP 404: database not found: mon"},
		{`{"results":[{"statement_id":0,"error":"error parsing query"}]}`, 200, "error parsing query"},
		{`<html>bad gateway</html>`, 502, "HTTP 502: Bad Gateway"},
	} {
		srv := httptest.NewServer(influxHandler(t, tc.body, tc.status))
		c, _ := NewCollector(q)
		err := c.ReadInflux(context.Background(), Influx{URL: srv.URL, Bucket: "mon/autogen", Token: "user:pass"})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("status %d: err = %v, want %q", tc.status, err, tc.want)
		}
	}
	c, _ = NewCollector(q)
	if err := c.ReadInflux(context.Background(), Influx{URL: "ftp://x", Bucket: "a"}); err == nil {
		t.Error("ftp URL accepted")
	}
}

// sameTimeLP holds, in the order an agent could write them: b's point at t1
// before a's (one series grouped by clock holds both hosts), and a's point at
// t2 written twice.
func sameTimeLP() (lp string, t1, t2 int64) {
	t1, t2 = 1_700_000_000_000_000_000, 1_700_000_001_000_000_000
	lp = fmt.Sprintf("clock_offset,clock=realtime,host=b offset_ns=5i %d\n", t1) +
		fmt.Sprintf("clock_offset,clock=realtime,host=a offset_ns=7i %d\n", t1) +
		fmt.Sprintf("clock_offset,clock=realtime,host=a offset_ns=1i %d\n", t2) +
		fmt.Sprintf("clock_offset,clock=realtime,host=a offset_ns=2i %d\n", t2) +
		fmt.Sprintf("clock_offset,clock=realtime,host=b offset_ns=9i %d\n", t2+1e9)
	return lp, t1, t2
}

// TestSameTimeAsInfluxDB (issue 21 item 7): the spool's records and
// InfluxDB's answer for them give the same series. InfluxDB keeps the last
// write of a point (measurement, tag set, time) and answers GROUP BY * one
// tag set after the other in key order; the report keeps the last write too,
// and of records of several tag sets at one time in a grouped series the one
// of the first tag set, whatever the order it reads them in. Both counted.
func TestSameTimeAsInfluxDB(t *testing.T) {
	lp, t1, t2 := sameTimeLP()
	q := Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"clock"}}
	c, _ := NewCollector(q)
	if err := c.ReadLineProtocol(strings.NewReader(lp)); err != nil {
		t.Fatal(err)
	}
	fromLP, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	// What InfluxDB 1.8 stores of lp and answers (TestRealInfluxd checks
	// this against influxd itself).
	body := fmt.Sprintf(`{"results":[{"statement_id":0,"series":[
{"name":"clock_offset","tags":{"clock":"realtime","host":"a"},"columns":["time","offset_ns"],"values":[[%d,7],[%d,2]]},
{"name":"clock_offset","tags":{"clock":"realtime","host":"b"},"columns":["time","offset_ns"],"values":[[%d,5],[%d,9]]}]}]}`, t1, t2, t1, t2+1e9)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
	defer srv.Close()
	ci, _ := NewCollector(q)
	if err := ci.ReadInflux(context.Background(), Influx{URL: srv.URL, Bucket: "mon"}); err != nil {
		t.Fatal(err)
	}
	fromInflux, err := ci.Finish()
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromLP[0], fromInflux[0]
	if fmt.Sprint(a.T, a.X) != fmt.Sprint(b.T, b.X) || fmt.Sprint(a.X) != "[7 2 9]" {
		t.Errorf("from the spool's lines %v %v, from InfluxDB %v %v; want [7 2 9]", a.T, a.X, b.T, b.X)
	}
	if a.Duplicates != 1 || a.SameTime != 1 || b.Duplicates != 0 || b.SameTime != 1 || c.Counts.Duplicates != 1 || c.Counts.SameTime != 1 {
		t.Errorf("counted: lines %d written again, %d at the same time; InfluxDB's %d, %d", a.Duplicates, a.SameTime, b.Duplicates, b.SameTime)
	}
	r, err := Compute(a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(r.Notes, ";"); !strings.Contains(n, "1 record at the time of another tag set's record dropped") {
		t.Errorf("notes %q", n)
	}
}

// TestRunMergesInputs (issue 21 item 13): several inputs are read in order
// into one set of series: two boards' files give both hosts, a point in both
// keeps the later input's value (as InfluxDB keeps the last written), and a
// spool without segments among them is said on stderr, not an error.
func TestRunMergesInputs(t *testing.T) {
	a := strings.ReplaceAll(lines(3, 14, -7), "ref=ptp0", "ref=ptp0,host=a")
	b := strings.ReplaceAll(lines(5, 6, 7, 8), "ref=ptp0", "ref=ptp0,host=b") +
		strings.ReplaceAll(strings.SplitAfter(lines(0, 99), "\n")[1], "ref=ptp0", "ref=ptp0,host=a") // a's second point again
	empty := t.TempDir()
	in := Input{Paths: []string{writeLP(t, a), empty, writeLP(t, b)}}
	q := Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"host"}}
	var out, errw bytes.Buffer
	if err := Run(context.Background(), in, q, RunOptions{Format: "json"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var got []Result
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Series["host"] != "a" || got[1].Series["host"] != "b" || got[0].N != 3 || got[1].N != 4 {
		t.Fatalf("%d series: %+v", len(got), got)
	}
	if got[0].MaxNS != 99 || got[0].Dups != 1 {
		t.Errorf("host=a: max %d, %d written again; want b's 99 kept, 1", got[0].MaxNS, got[0].Dups)
	}
	if !strings.Contains(errw.String(), "report: spool "+empty+": no matching records: no segment files") ||
		!strings.Contains(errw.String(), "1 record of points written again") {
		t.Errorf("stderr: %s", errw.String())
	}
	// alone, the empty spool is an error naming it
	err := Run(context.Background(), Input{Paths: []string{empty}}, q, RunOptions{}, &out, &errw)
	if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), empty) {
		t.Errorf("an empty spool alone: %v", err)
	}
}
