package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cellOf is row(r)'s cell under the column whose header starts with col.
func cellOf(t *testing.T, r *Result, col string) string {
	t.Helper()
	h := header([]*Result{r})
	for i, c := range h {
		if strings.HasPrefix(c, col) {
			return row(r)[i]
		}
	}
	t.Fatalf("no column %q in %q", col, h)
	return ""
}

var exponent = regexp.MustCompile(`\de[-+]?\d`)

// TestTableDriftAndTau (issue 34 item 4): Table I prints drift in ppm, ppb
// or ppt with 4 significant digits and its half interval in the same unit,
// never in exponent notation (was "-1.416e-07 ±… ppm"), and τ as every part
// of the report prints it: 100 ms, 1 s, 10 000 s (was "@10000s", "1e4 s").
func TestTableDriftAndTau(t *testing.T) {
	for _, tc := range []struct {
		ppm, half float64
		want      string
	}{
		{-1.416e-07, 3e-8, "-0.1416 ±0.03 ppt"},
		{-1.416e-07, 5e-4, "-0.1416 ±500 ppt"},
		{-1.416e-07, 5e-3, "-0.0001416 ±5 ppb"},
		{0.015018, 0.00052, "15.02 ±0.52 ppb"},
		{-3.2, 0.0123, "-3.2 ±0.012 ppm"},
		{123.456, 2, "123.5 ±2 ppm"},
		{0, 0, "0 ±0 ppb"},
	} {
		d := tc.ppm
		r := &Result{N: 10, DriftPPM: &d, DriftPPMCI: []float64{d - tc.half, d + tc.half}}
		if got := cellOf(t, r, "drift"); got != tc.want {
			t.Errorf("drift %g ±%g ppm: cell %q, want %q", tc.ppm, tc.half, got, tc.want)
		}
	}
	for _, tc := range []struct {
		tau  float64
		want string
	}{{0.1, "@100 ms"}, {1, "@1 s"}, {1.5, "@1.5 s"}, {1000, "@1000 s"}, {1e4, "@10 000 s"}, {16384, "@16 384 s"}, {1e5, "@100 000 s"}} {
		r := &Result{N: 10, ADev: []Point{{TauS: tc.tau, Value: 2.5e-9}}}
		got := cellOf(t, r, "ADEV")
		if !strings.HasSuffix(got, tc.want) || exponent.MatchString(strings.TrimPrefix(got, "2.5e-9")) {
			t.Errorf("ADEV at τ %g s: cell %q, want it to end %q", tc.tau, got, tc.want)
		}
	}
}

// TestDeviationPointsCarryNAndInterval (issue 34 item 4): of a 134 s series
// at 1 s, every ADEV, MDEV and TDEV point in the JSON carries its number
// of terms, its non-overlapping terms and a 68 % interval around it, wider
// at 64 s (few terms) than at 2 s; MTIE carries its count; Table I's ADEV
// shows its interval.
func TestDeviationPointsCarryNAndInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 135)
	for i := range vals {
		vals[i] = int64(math.Round(20 * rng.NormFloat64()))
	}
	var b bytes.Buffer
	_, rs, _, err := collect(t, lines(vals...), q0, Options{})
	if err == nil {
		err = WriteJSON(&b, rs)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	type pt struct {
		TauS  float64   `json:"tau_s"`
		Value float64   `json:"value"`
		N     *int      `json:"n"`
		K     *int      `json:"n_nonoverlapping"`
		CI    []float64 `json:"ci"`
	}
	rel := map[float64]float64{}
	for _, kind := range []string{"adev", "mdev", "tdev", "mtie"} {
		var ps []pt
		if err := json.Unmarshal(out[0][kind], &ps); err != nil || len(ps) < 6 {
			t.Fatalf("%s: %v, %d points", kind, err, len(ps))
		}
		for _, p := range ps {
			m := int(math.Round(p.TauS))
			if p.N == nil || *p.N < 1 || p.K == nil || *p.K != (*p.N+m-1)/m {
				t.Errorf("%s at %g s: n %v, non-overlapping %v (want n > 0 and ⌈n/m⌉)", kind, p.TauS, p.N, p.K)
				continue
			}
			if kind == "mtie" {
				if p.CI != nil {
					t.Errorf("mtie at %g s has an interval %v", p.TauS, p.CI)
				}
				continue
			}
			if len(p.CI) != 2 || p.CI[0] < 0 || p.CI[0] > p.Value || p.CI[1] < p.Value {
				t.Errorf("%s at %g s: value %g, interval %v", kind, p.TauS, p.Value, p.CI)
				continue
			}
			if kind == "adev" {
				rel[p.TauS] = (p.CI[1] - p.Value) / p.Value
			}
		}
	}
	if rel[64] < 3*rel[2] || rel[2] <= 0 {
		t.Errorf("ADEV's relative interval: %.3g at 64 s, %.3g at 2 s; want the 64 s one at least 3 times wider", rel[64], rel[2])
	}
	var tx bytes.Buffer
	if err := WriteText(&tx, rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tx.String(), "±1σ") || !regexp.MustCompile(`e-\d+ ±[0-9.]+ % @1 s`).MatchString(tx.String()) {
		t.Errorf("Table I's ADEV lacks its interval:\n%s", tx.String())
	}
}

// svgTexts are the texts an SVG plot draws.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestPlotsReadApart (issue 34 item 4): the CDF's p75, p95 and p99 marks
// each have their own dash (were one red dash) and a legend entry; the
// stability plots label τ as the tables do (10 000 s, not 1e4 s) and say
// that their bars are 68 % intervals; the drift's legend is in ppb, not
// exponents of ppm.
func TestPlotsReadApart(t *testing.T) {
	if !PlotsBuilt {
		t.Skip("this build has no plots (32-bit ARM)")
	}
	// 2100 samples 10 s apart: τ from 10 s to 10 240 s; a drift of 15 ppb.
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for i := range 2100 {
		fmt.Fprintf(&b, "clock_offset,clock=xo offset_ns=%di %d\n", int64(math.Round(150*float64(i)+30*rng.NormFloat64())), 1_700_000_000_000_000_000+int64(i)*10e9)
	}
	dir := t.TempDir()
	var set PlotSet
	ss, rs, _, err := collect(t, b.String(), q0, Options{})
	if err == nil {
		set, err = WritePlotSet(dir, "x", ss[0], rs[0])
	}
	if err != nil {
		t.Fatal(err)
	}
	svg := map[string]string{}
	for _, im := range set.Images {
		svg[im.Kind] = filepath.Join(dir, im.SVG)
	}
	cdf, err := os.ReadFile(svg["cdf"])
	if err != nil {
		t.Fatal(err)
	}
	var dashes []string
	for _, m := range regexp.MustCompile(`stroke-dasharray:([^;"]+)`).FindAllStringSubmatch(string(cdf), -1) {
		if m[1] != "none" && !slices.Contains(dashes, m[1]) {
			dashes = append(dashes, m[1])
		}
	}
	if len(dashes) < 3 {
		t.Errorf("the CDF's marks share their dash: %q", dashes)
	}
	texts := strings.Join(svgTexts(t, svg["cdf"]), "\n")
	for _, w := range []string{"p75 = ", "p95 = ", "p99 = "} {
		if !strings.Contains(texts, w) {
			t.Errorf("the CDF's legend lacks %q:\n%s", w, texts)
		}
	}
	for _, kind := range []string{"adev", "tdev"} {
		texts := svgTexts(t, svg[kind])
		if !slices.Contains(texts, "10 000 s") || !slices.Contains(texts, "1000 s") {
			t.Errorf("%s: τ axis not labelled 1000 s, 10 000 s: %q", kind, texts)
		}
		for _, s := range texts {
			if strings.HasSuffix(s, " s") && exponent.MatchString(s) {
				t.Errorf("%s: τ label %q", kind, s)
			}
		}
		if !strings.Contains(strings.Join(texts, "\n"), "±1σ (68 %) bars") {
			t.Errorf("%s: the legend does not say what the bars are: %q", kind, texts)
		}
	}
	offTexts := svgTexts(t, svg["offset"])
	found := false
	for _, s := range offTexts {
		if strings.HasPrefix(s, "drift ") {
			found = true
			if !strings.Contains(s, " ppb") || exponent.MatchString(s) {
				t.Errorf("offset plot: %q, want the drift in ppb without exponents", s)
			}
		}
	}
	if !found {
		t.Errorf("the offset plot has no drift legend: %q", offTexts)
	}
}
