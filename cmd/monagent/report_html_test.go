package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestReportHTMLAndCorrelateFlags: --help offers --correlate and --html;
// --html on a spool of configs/local.yaml writes index.html whose every
// image exists (the sensors-real acceptance check); bad --correlate usage
// is one line, exit 2.
func TestReportHTMLAndCorrelateFlags(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, _ := run(t, dir, "report", "--help")
	for _, f := range []string{"--correlate", "--freq-window", "--html"} {
		if !strings.Contains(stdout+stderr, f) {
			t.Errorf("report --help lacks %s", f)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--correlate", "sensor"}, "want measurement.field"},
		{[]string{"--correlate", "sensor.value", "--traffic"}, "--correlate pairs a clock's offsets"},
		{[]string{"--freq-window", "1m"}, "--freq-window needs --correlate"},
	} {
		args := append([]string{"report", "--measurement", "clock_offset", "--field", "offset_ns"}, tc.args...)
		if tc.args[len(tc.args)-1] == "--traffic" {
			args = append([]string{"report"}, tc.args...)
		}
		_, stderr, code := run(t, dir, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	local, err := os.ReadFile("../../configs/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(local), "dir: ./data/spool", "dir: "+filepath.Join(dir, "spool"), 1)
	body = strings.Replace(body, "interval: 1s", "interval: 100ms", 1)
	body = strings.Replace(body, "stdout: true", "stdout: false", 1)
	cfg := writeConfig(t, dir, body)
	if _, stderr, code := run(t, dir, "run", "--config", cfg, "--duration", "3s"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	html := filepath.Join(dir, "html")
	if _, stderr, code := run(t, dir, "report", "--input", filepath.Join(dir, "spool"), "--measurement", "clock_offset", "--field", "offset_ns", "--html", html); code != 0 {
		t.Fatalf("report --html: exit %d\n%s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(html, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`src="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		if fi, err := os.Stat(filepath.Join(html, m[1])); err != nil || fi.Size() == 0 {
			t.Errorf("index.html names a missing image %s", m[1])
		}
		n++
	}
	if runtime.GOARCH == "arm" {
		if n != 0 || !strings.Contains(string(page), "no plots") {
			t.Errorf("linux/arm: %d images, or the page does not say why none", n)
		}
		return
	}
	if n < 4 {
		t.Errorf("index.html shows %d images, want >= 4", n)
	}
}
