package main

import (
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
	for _, want := range []string{"series", "µ", "σ", "|x| p99", "ADEV", "drift ppm", "clock=realtime,", "clock=tai,host="} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if plots == "" {
		return
	}
	pngs, _ := filepath.Glob(filepath.Join(plots, "*clock=realtime*.png"))
	svgs, _ := filepath.Glob(filepath.Join(plots, "*.svg"))
	if len(pngs) < 4 || len(svgs) < 4 {
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
	} {
		_, stderr, code := run(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
