package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// TestReportOnLocalSpool is the end-to-end check: monagent run with
// configs/local.yaml (spool moved under the test's directory), then monagent
// report on that spool prints the table and writes decodable plots.
func TestReportOnLocalSpool(t *testing.T) {
	dir := t.TempDir()
	local, err := os.ReadFile("../../configs/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(local), "dir: ./data/spool", "dir: "+filepath.Join(dir, "spool"), 1)
	body = strings.Replace(body, "stdout: true", "stdout: false", 1)
	if body == string(local) {
		t.Fatal("configs/local.yaml no longer has spool dir ./data/spool")
	}
	cfg := writeConfig(t, dir, body)
	if _, stderr, code := run(t, dir, "run", "--config", cfg, "--duration", "4500ms"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	plots := filepath.Join(dir, "plots")
	if runtime.GOARCH == "arm" {
		// The board's build has no plots; it says so in one line.
		_, stderr, code := run(t, dir, "report", "--config", cfg, "--measurement", "clock_offset", "--field", "offset_ns", "--plots", plots)
		if code == 0 || !strings.Contains(stderr, "this linux/arm build has no plots") {
			t.Errorf("report --plots on linux/arm: exit %d, %q", code, stderr)
		}
		plots = ""
	}
	args := []string{"report", "--config", cfg, "--measurement", "clock_offset", "--field", "offset_ns"}
	if plots != "" {
		args = append(args, "--plots", plots)
	}
	stdout, stderr, code := run(t, dir, args...)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	t.Logf("\n%s%s", stdout, stderr)
	for _, want := range []string{"series", "µ", "σ", "|x| p99", "ADEV", "drift ±95 %", "clock=realtime,", "clock=tai,host="} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	constant := checkRealtimeExact(t, dir, cfg)
	if plots == "" {
		return
	}
	pngs, _ := filepath.Glob(filepath.Join(plots, "*clock=realtime*.png"))
	svgs, _ := filepath.Glob(filepath.Join(plots, "*.svg"))
	// A series that never moved (realtime − monotonic_raw on an idle VM can
	// be one value to the ns) has no stability to draw, so no ADEV plot.
	kinds := []string{"hist", "cdf", "offset", "adev"}
	if constant {
		kinds = kinds[:3]
	}
	for _, k := range kinds {
		if !slices.ContainsFunc(pngs, func(p string) bool { return strings.HasSuffix(p, "-"+k+".png") }) {
			t.Errorf("no %s plot for clock=realtime (constant %v): %v", k, constant, pngs)
		}
	}
	if len(svgs) < len(kinds) {
		t.Fatalf("plots: %d PNG for clock=realtime, %d SVG in all", len(pngs), len(svgs))
	}
	for _, p := range pngs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
			t.Errorf("%s is %dx%d, want at least 400x300", filepath.Base(p), b.Dx(), b.Dy())
		}
	}
	stdout, _, code = run(t, dir, "report", "--config", cfg, "--measurement", "clock_offset", "--field", "offset_ns", "--where", "clock=tai", "--where", "ref=realtime", "--format", "json")
	if code != 0 || !strings.HasPrefix(stdout, "[\n  {\n    \"series\": {") || !strings.Contains(stdout, `"ref": "realtime"`) || strings.Contains(stdout, `"monotonic_raw"`) {
		t.Errorf("json: exit %d\n%s", code, stdout)
	}
}

// TestReportErrors: bad usage exits 2, input without data exits 1, each with
// one line.
func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.lp")
	os.WriteFile(empty, nil, 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report", "--field", "offset_ns"}, 2, "report: --measurement and --field are required"},
		{[]string{"report", "--measurement", "m", "--field", "f", "--format", "xml"}, 2, `--format "xml"`},
		{[]string{"report", "--measurement", "m", "--field", "f", "--where", "novalue"}, 2, `--where "novalue": want tag=value`},
		{[]string{"report", "--measurement", "m", "--field", "f", "--start", "yesterday"}, 2, "--start"},
		{[]string{"report", "--input", empty, "--measurement", "m", "--field", "f"}, 1, "no matching records: 0 records read"},
		{[]string{"report", "--input", filepath.Join(dir, "none"), "--measurement", "m", "--field", "f"}, 1, "no such file"},
		{[]string{"report", "--input", "http://127.0.0.1:1", "--bucket", "db/rp", "--measurement", "m", "--field", "f"}, 1, "influxdb http://127.0.0.1:1:"},
		// Usage errors found before any input is read (before: after, exit 1).
		{[]string{"report", "--input", "http://127.0.0.1:1", "--measurement", "m", "--field", "f"}, 2, "an InfluxDB --input needs --bucket"},
		{[]string{"report", "--input", empty, "--measurement", "m", "--field", "f", "--plots", empty}, 2, "--plots " + empty + ": is a file"},
		{[]string{"report", "--input", empty, "--measurement", "m", "--field", "f", "--html", empty}, 2, "--html " + empty + ": is a file"},
	} {
		_, stderr, code := run(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestReportMatchAndTraffic runs the binary's two other modes on a file of
// line protocol: --match pairs two boards' rising edges (b1 misses edge 3,
// b2 edge 7; b2 is 3.5 µs late, 1 µs of it Δ_ISR) and --traffic turns the
// probes' byte rates into clients per server and master port.
func TestReportMatchAndTraffic(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	const t0 = 1_700_000_000_000_000_000
	for k := int64(0); k < 10; k++ {
		ta := t0 + k*1_000_000_000
		if k != 3 {
			fmt.Fprintf(&b, "gpio_event,edge=rising,host=b1 kernel_ns=%di,global_ns=%di,global_bound_ns=100i %d\n", k, ta, ta)
		}
		if k != 7 {
			fmt.Fprintf(&b, "gpio_event,edge=rising,host=b2 kernel_ns=%di,global_ns=%di,global_bound_ns=150i %d\n", k, ta+3500, ta+3500)
		}
		fmt.Fprintf(&b, "gpio_event,edge=falling,host=b2 kernel_ns=%di %d\n", k, ta+500_000_000)
	}
	b.WriteString("ntp_probe,host=b1,server=10.0.0.1:123 bytes_per_s=22.5 9000000000\n")
	b.WriteString("ptp_probe_stats,host=b1,master=10.0.0.2 bytes_sent_per_s=86.0,bytes_received_per_s=100.0 9000000000\n")
	in := filepath.Join(dir, "events.lp")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"report", "--input", in, "--measurement", "gpio_event", "--match", "host=b1,b2", "--where", "edge=rising", "--delta-isr", "1us"}
	stdout, stderr, code := run(t, dir, base...)
	t.Logf("\n%s%s", stdout, stderr)
	if code != 0 || !strings.Contains(stdout, "match host=b1 vs host=b2  8  2.5 µs") ||
		!strings.Contains(stderr, "8 pairs of 9 and 9 events; unmatched: 1 of host=b1, 1 of host=b2 (window 400ms, Δ_ISR 1µs, times: time)") {
		t.Errorf("match: exit %d", code)
	}
	stdout, _, code = run(t, dir, append(base, "--time-field", "global_ns", "--format", "json")...)
	for _, w := range []string{`"match": "host=b1 vs host=b2"`, `"n": 8`, `"mean_ns": 2500`, `"unmatched_reference": 1`, `"unmatched_other": 1`, `"bound_mean_ns": 250`, `"bound_max_ns": 250`, `"time_field": "global_ns"`} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("match json: exit %d, lacks %s\n%s", code, w, stdout)
		}
	}
	stdout, stderr, code = run(t, dir, "report", "--input", in, "--traffic")
	t.Logf("\n%s%s", stdout, stderr)
	for _, w := range []string{"22.5             55555                     555555", "186.0            6720                      67204", "study: 8 s poll"} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("traffic: exit %d, lacks %q", code, w)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--match", "host=b1"}, 2, `--match "host=b1": want TAG=REF,OTHER`},
		{[]string{"--match", "host=b1,b2", "--window", "0s"}, 2, "--window 0s: must be positive"},
		{[]string{"--match", "host=b1,b2", "--field", "kernel_ns"}, 2, "--match takes the event time from the record or --time-field"},
		{[]string{"--measurement", "gpio_event", "--field", "kernel_ns", "--delta-isr", "1us"}, 2, "need --match"},
		{[]string{"--traffic", "--match", "host=b1,b2"}, 2, "--traffic and --match are separate"},
		{[]string{"--match", "host=b1,b3"}, 1, "match: no events with host=b3 (found host=b1, b2)"},
		{[]string{"--match", "host=b1,b2", "--window", "10ns"}, 1, "no pair of events within the window 10ns"},
	} {
		args := append([]string{"report", "--input", in}, tc.args...)
		if !slices.Contains(tc.args, "--measurement") && !slices.Contains(tc.args, "--traffic") {
			args = append(args, "--measurement", "gpio_event")
		}
		_, stderr, code := run(t, dir, args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	_, stderr, code = run(t, dir, "report", "--input", filepath.Join(dir, "none.lp"), "--traffic")
	if code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("traffic, no input: exit %d, %q", code, stderr)
	}
}

// TestReportPiecewise: --piecewise places each board's events between its
// two hca_model records (b0 is rank 0: it shipped hca_sync) and the JSON
// says so; the offsets are those of hca.Interpolate's placements. Misuse
// exits 2 with one line.
func TestReportPiecewise(t *testing.T) {
	dir := t.TempDir()
	const x0 = 5_000_000_000_000 // b1's HCA clock at its first model's anchor
	ma := timebase.LinearModel{Origin: x0, Intercept: 2000, Slope: 1e-6, N: 8, MeanX: x0, ResidualNS: 10, SlopeErr: 1e-9, FloorNS: 30}
	mb := timebase.LinearModel{Origin: x0 + 10_000_000_000, Intercept: 12_500, Slope: 3e-6, N: 8, MeanX: x0 + 10_000_000_000, ResidualNS: 10, SlopeErr: 1e-9, FloorNS: 30}
	var b strings.Builder
	b.WriteString("hca_sync,algorithm=hca3,host=b0 round=1i 100\n")
	for i, m := range []timebase.LinearModel{ma, mb} {
		for _, host := range []string{"b0", "b1"} { // b0's copy, then b1's own
			fmt.Fprintf(&b, "hca_model,algorithm=hca3,host=%s,rank=1 round=%di,slope=%g,intercept_ns=%di,origin_ns=%di,slope_err=%g,residual_ns=%g,points=%di,mean_x_ns=%di,floor_ns=%di %d\n",
				host, i+1, m.Slope, m.Intercept, m.Origin, m.SlopeErr, m.ResidualNS, m.N, m.MeanX, m.FloorNS, 100+i)
		}
	}
	var sum, maxBound int64
	for k := int64(0); k < 10; k++ {
		g := x0 - 2000 + 100_000 + k*1_000_000_000 // the edge on rank 0's clock
		x1 := g + 2000 + 1500*k
		fmt.Fprintf(&b, "gpio_event,edge=rising,host=b0 hca_local_ns=%di,global_ns=%di %d\n", g, g, 1000+k)
		fmt.Fprintf(&b, "gpio_event,edge=rising,host=b1 hca_local_ns=%di,global_ns=0i %d\n", x1, 2000+k)
		off, bound := hca.Interpolate(ma, mb, x1)
		sum += x1 - off - g
		maxBound = max(maxBound, bound)
	}
	in := filepath.Join(dir, "events.lp")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"report", "--input", in, "--measurement", "gpio_event", "--match", "host=b0,b1"}
	stdout, stderr, code := run(t, dir, append(base, "--time-field", "global_ns", "--piecewise", "--format", "json")...)
	for _, w := range []string{`"n": 10`, fmt.Sprintf(`"mean_ns": %g`, float64(sum)/10), `"placement": "piecewise"`, `"events_no_model": 0`, `"events_no_hca_local": 0`,
		fmt.Sprintf(`"bound_max_ns": %d`, maxBound), `"placement_reference": "host=b0: rank 0 (the global timeline)"`, `"placement_other": "host=b1: rank 1: 2 models"`} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("piecewise json: exit %d, lacks %s\n%s%s", code, w, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"--piecewise"},
		{"--time-field", "global_ns", "--piecewise"},
		{"--match", "host=b0,b1", "--piecewise"},
		{"--match", "host=b0,b1", "--time-field", "kernel_ns", "--piecewise"},
	} {
		a := append([]string{"report", "--input", in, "--measurement", "gpio_event"}, args...)
		_, stderr, code := run(t, dir, a...)
		if code != 2 || !strings.Contains(stderr, "report: --piecewise needs --match and --time-field global_ns") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// checkRealtimeExact (issue 21 items 8 and 13): the realtime against
// monotonic_raw series of a real run (~1.8e18 ns) prints exact integers, each
// its base plus its relative value rounded, within the exact min and max;
// and the run's spool merged with another board's file (a second --input)
// gives both boards. It reports whether the series was one value throughout.
func checkRealtimeExact(t *testing.T, dir, cfg string) (constant bool) {
	t.Helper()
	stdout, stderr, code := run(t, dir, "report", "--config", cfg, "--measurement", "clock_offset", "--field", "offset_ns",
		"--where", "clock=realtime", "--where", "ref=monotonic_raw", "--group-by", "host,clock,ref", "--format", "json")
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var got []map[string]any
	if err := dec.Decode(&got); code != 0 || err != nil || len(got) != 1 {
		t.Fatalf("json: exit %d, %v, %d series: %s", code, err, len(got), stderr)
	}
	g := got[0]
	num := func(v any) *big.Float {
		f, ok := new(big.Float).SetPrec(200).SetString(fmt.Sprint(v))
		if !ok {
			t.Fatalf("%v is not a number", v)
		}
		return f
	}
	base, ok := new(big.Int).SetString(fmt.Sprint(g["base_ns"]), 10)
	rel, _ := g["relative"].(map[string]any)
	if !ok || rel == nil || g["base_ns_str"] != base.String() {
		t.Fatalf("no base_ns and relative values: %v", g)
	}
	lo, hi := num(g["min_ns"]), num(g["max_ns"])
	for _, k := range []string{"mean_ns", "p50_ns", "p75_ns", "p95_ns", "p99_ns", "p999_ns", "min_ns", "max_ns"} {
		v, ok := new(big.Int).SetString(fmt.Sprint(g[k]), 10)
		r, _ := num(rel[k]).Float64()
		want := new(big.Int).Add(base, big.NewInt(int64(math.Round(r))))
		if !ok || v.Cmp(want) != 0 || num(g[k]).Cmp(lo) < 0 || num(g[k]).Cmp(hi) > 0 {
			t.Errorf("%s = %v, want the base %v + %v rounded, within [%v, %v]", k, g[k], base, rel[k], g["min_ns"], g["max_ns"])
		}
	}
	t.Logf("realtime − monotonic_raw: base %v, mean %v (%v), p50 %v, p999 %v", base, g["mean_ns"], rel["mean_ns"], g["p50_ns"], g["p999_ns"])
	host := fmt.Sprint(g["series"].(map[string]any)["host"])
	other := filepath.Join(dir, "boardb.lp")
	lp := fmt.Sprintf("clock_offset,clock=realtime,host=boardb,ref=monotonic_raw offset_ns=%si 1\n", base)
	if err := os.WriteFile(other, []byte(lp), 0o644); err != nil {
		t.Fatal(err)
	}
	spoolDir := filepath.Join(dir, "spool")
	stdout, stderr, code = run(t, dir, "report", "--input", spoolDir, "--input", other, "--measurement", "clock_offset", "--field", "offset_ns",
		"--where", "clock=realtime", "--group-by", "host,clock,ref", "--format", "json")
	var merged []struct {
		Series map[string]string `json:"series"`
	}
	if err := json.Unmarshal([]byte(stdout), &merged); code != 0 || err != nil {
		t.Fatalf("two --input: exit %d, %v: %s", code, err, stderr)
	}
	var hosts []string
	for _, s := range merged {
		hosts = append(hosts, s.Series["host"])
	}
	slices.Sort(hosts)
	if want := []string{"boardb", host}; !slices.Equal(slices.Compact(hosts), slices.Sorted(slices.Values(want))) {
		t.Errorf("the run's spool and boardb.lp: hosts %v, want %v", hosts, want)
	}
	return num(g["min_ns"]).Cmp(num(g["max_ns"])) == 0
}
