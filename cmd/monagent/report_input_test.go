package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/monagent/monagent/stats"
)

// boardLP writes one board's clock offsets: realtime against monotonic_raw
// near 1.8e18 ns (base plus rel) and tai against realtime.
func boardLP(t *testing.T, dir, host string, base int64, rel []int64) string {
	t.Helper()
	var b strings.Builder
	for i, r := range rel {
		ts := 1_700_000_000_000_000_000 + int64(i)*1_000_000_000
		fmt.Fprintf(&b, "clock_offset,clock=realtime,host=%s,ref=monotonic_raw offset_ns=%di %d\n", host, base+r, ts)
		fmt.Fprintf(&b, "clock_offset,clock=tai,host=%s,ref=realtime offset_ns=%di %d\n", host, 37_000_000_000+r, ts)
	}
	p := filepath.Join(dir, host+".lp")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// type7 is the type 7 percentile of sorted integers, as a float relative to
// nothing: the test's own reckoning.
func type7(sorted []int64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	k := int(math.Floor(h))
	if k >= len(sorted)-1 {
		return float64(sorted[len(sorted)-1])
	}
	return float64(sorted[k]) + (h-float64(k))*float64(sorted[k+1]-sorted[k])
}

// TestReportFarSeriesBoundsAndInputs (issue 21 items 8 and 13) runs the
// binary on two boards' files: the JSON of the realtime series (~1.8e18 ns)
// has its mean and percentiles as exact integers, the tables print them
// relative to b with b in a note, --bounds changes the text table, two
// --input are merged, and --start after --stop or an --input given twice
// are usage errors.
func TestReportFarSeriesBoundsAndInputs(t *testing.T) {
	dir := t.TempDir()
	const base = 1_795_567_471_826_515_523 // float64 holds it to 256 ns
	rel := []int64{0, 12, -7, 24, 3, 31, 9, 17, -2, 6, 14}
	a := boardLP(t, dir, "boarda", base, rel)
	b := boardLP(t, dir, "boardb", base+1000, rel[:5])
	rep := []string{"report", "--input", a, "--measurement", "clock_offset", "--field", "offset_ns"}

	stdout, stderr, code := run(t, dir, append(rep, "--format", "json", "--where", "clock=realtime")...)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var got []map[string]any
	if err := dec.Decode(&got); err != nil || len(got) != 1 {
		t.Fatalf("json: %v, %d series\n%s", err, len(got), stdout)
	}
	sorted := slices.Sorted(slices.Values(rel))
	var sum int64
	for _, r := range rel {
		sum += r
	}
	exact := func(v float64) string { return strconv.FormatInt(base+int64(math.Round(v)), 10) }
	want := map[string]string{"mean_ns": exact(float64(sum) / float64(len(rel))), "p50_ns": exact(type7(sorted, 0.5)),
		"p95_ns": exact(type7(sorted, 0.95)), "p999_ns": exact(type7(sorted, 0.999)), "min_ns": exact(float64(sorted[0])),
		"max_abs_ns": exact(float64(sorted[len(sorted)-1])), "base_ns": exact(0)}
	for k, w := range want {
		if n, _ := got[0][k].(json.Number); n.String() != w {
			t.Errorf("%s = %v, want %s", k, got[0][k], w)
		}
	}
	if got[0]["mean_ns"] == got[0]["p50_ns"] || got[0]["p50_ns"] == got[0]["p999_ns"] {
		t.Errorf("mean %v, p50 %v, p999 %v", got[0]["mean_ns"], got[0]["p50_ns"], got[0]["p999_ns"])
	}

	stdout, _, code = run(t, dir, append(rep, "--where", "clock=realtime")...)
	mean := stats.FormatNS(float64(sum) / float64(len(rel)))
	for _, w := range []string{"  b+" + mean + "  ", fmt.Sprintf("b = %d ns, the first value", int64(base))} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("text: exit %d, lacks %q\n%s", code, w, stdout)
		}
	}
	if strings.Contains(stdout, "e+09 s") {
		t.Errorf("text prints float64 seconds:\n%s", stdout)
	}

	// --bounds changes the text and markdown tables
	for _, format := range []string{"text", "markdown"} {
		t1, _, c1 := run(t, dir, append(rep, "--format", format, "--bounds", "100ns")...)
		t2, _, c2 := run(t, dir, append(rep, "--format", format, "--bounds", "1ms,5ms")...)
		if c1 != 0 || c2 != 0 || t1 == t2 || !strings.Contains(t1, "≤100 ns") || !strings.Contains(t2, "≤5 ms") || strings.Contains(t2, "≤100 ns") {
			t.Errorf("%s with --bounds 100ns (exit %d):\n%s\nwith 1ms,5ms (exit %d):\n%s", format, c1, t1, c2, t2)
		}
	}

	// two inputs merged
	stdout, stderr, code = run(t, dir, "report", "--input", a, "--input", b, "--measurement", "clock_offset", "--field", "offset_ns",
		"--group-by", "host,clock,ref", "--format", "json")
	var merged []struct {
		Series map[string]string `json:"series"`
		N      int               `json:"n"`
	}
	if err := json.Unmarshal([]byte(stdout), &merged); code != 0 || err != nil {
		t.Fatalf("two --input: exit %d, %v: %s", code, err, stderr)
	}
	n := map[string]int{}
	for _, s := range merged {
		n[s.Series["host"]] += s.N
	}
	if len(merged) != 4 || n["boarda"] != 2*len(rel) || n["boardb"] != 2*5 {
		t.Errorf("two --input: samples per host %v in %d series, want boarda %d, boardb %d in 4", n, len(merged), 2*len(rel), 10)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--start", "2026-01-02T00:00:00Z", "--stop", "2026-01-01T00:00:00Z"}, "report: --start 2026-01-02T00:00:00Z is after --stop 2026-01-01T00:00:00Z"},
		{[]string{"--start", "-1h", "--stop", "-2h"}, "report: --start -1h is after --stop -2h"},
		{[]string{"--input", a}, "report: --input " + a + " is given twice"},
	} {
		_, stderr, code := run(t, dir, append(rep, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	_, stderr, code = run(t, dir, "report", "--input", "http://127.0.0.1:1", "--bucket", "db", "--measurement", "m", "--field", "f", "--stop", "-2h")
	if code != 2 || !strings.Contains(stderr, "--start -1h (the default with an InfluxDB --input) is after --stop -2h") {
		t.Errorf("InfluxDB's default --start after --stop: exit %d, %q", code, stderr)
	}
}
