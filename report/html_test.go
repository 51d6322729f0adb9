package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// htmlReport writes the HTML report of a clock correlated with a
// temperature and of a constant series into a new directory.
func htmlReport(t *testing.T) string {
	t.Helper()
	lp := synthClockAndTemperature(-28, 2, 0, false)
	for i := range 100 { // a clock that never moves: no stability plots
		lp += fmt.Sprintf("clock_offset,clock=tai,ref=realtime offset_ns=-37000000000i %d\n", 1_750_000_000_000_000_000+int64(i)*1e9)
	}
	in := filepath.Join(t.TempDir(), "in.lp")
	if err := os.WriteFile(in, []byte(lp), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o, _ := ParseCorrelate("sensor.value,kind=temperature")
	var out, errw bytes.Buffer
	if err := Run(context.Background(), Input{Paths: []string{in}}, qClock, RunOptions{Correlate: &o, HTMLDir: dir}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	t.Logf("%s", errw.String())
	return dir
}

var srcAttr = regexp.MustCompile(`(?:src|href)="([^"]*)"`)

// TestHTMLReport: index.html holds the table, the notes, the correlation and
// every plot, each image a file beside it; nothing refers to the network;
// a plot left out says why.
func TestHTMLReport(t *testing.T) {
	dir := htmlReport(t)
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<table>", "<th>µ</th>", "clock=xo,ref=gnss", "Frequency against sensor.value{", "<th>ppb/°C</th>", "-28", "the offsets of the longest regular segment never change"} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, "<script") {
		t.Error("index.html refers to the network or holds a script")
	}
	if !PlotsBuilt {
		if !strings.Contains(page, "this linux/arm build has no plots") {
			t.Error("the page of a build without plots does not say so")
		}
		return
	}
	n := 0
	for _, m := range srcAttr.FindAllStringSubmatch(page, -1) {
		ref := html.UnescapeString(m[1])
		if strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "#") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, ref)); err != nil || fi.Size() == 0 {
			t.Errorf("index.html names %q: %v", ref, err)
		}
		if strings.HasSuffix(ref, ".png") {
			n++
		}
	}
	// 7 plots of each clock (the constant one's frequency is a flat 0
	// against the temperature) but the constant one's ADEV and TDEV.
	if n != 12 {
		t.Errorf("%d images, want 12", n)
	}
	for _, want := range []string{"No ADEV and MDEV against τ: the series is constant", "No TDEV and MTIE against τ: the series is constant", "-freqsensor.png", "-freqtime.png"} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

// checkScript, put first in a copy of the page, records failed loads and
// console errors and, once the page has loaded, writes every image's state
// into the DOM for --dump-dom.
const checkScript = `<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  window.__errors.push(t && t.src ? 'failed to load ' + t.src : String(e.message));
}, true);
var __ce = console.error;
console.error = function () { window.__errors.push(Array.prototype.join.call(arguments, ' ')); __ce.apply(console, arguments); };
window.addEventListener('load', function () {
  var broken = [];
  for (var i = 0; i < document.images.length; i++) {
    var im = document.images[i];
    if (!im.complete || im.naturalWidth === 0) { broken.push(im.getAttribute('src')); }
  }
  var pre = document.createElement('pre');
  pre.id = 'monagent-check';
  var overflow = [];
  var boxes = document.querySelectorAll('table, .wide');
  for (var j = 0; j < boxes.length; j++) {
    var b = boxes[j];
    if (b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().right > window.innerWidth) {
      overflow.push(b.tagName + ' ' + (b.querySelector('th') || b).textContent.slice(0, 40) + ': ' + b.scrollWidth + ' px in ' + b.clientWidth + ' px, right edge ' + Math.round(b.getBoundingClientRect().right));
    }
  }
  pre.textContent = JSON.stringify({images: document.images.length, broken: broken, errors: window.__errors,
    viewport: window.innerWidth, page: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight, overflow: overflow});
  document.body.appendChild(pre);
});
</script>`

// TestHTMLInChromium opens the page in headless Chromium (as a root CI
// runs it: --no-sandbox): every image loads (naturalWidth > 0) and the
// console has no error; the screenshot is kept as the test's artefact.
func TestHTMLInChromium(t *testing.T) {
	if !PlotsBuilt {
		t.Skip("this build has no plots (32-bit ARM)")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("chromium is not installed (scripts/test.sh installs Debian's chromium)")
	}
	dir := htmlReport(t)
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	check := filepath.Join(dir, "check.html")
	if err := os.WriteFile(check, []byte(strings.Replace(string(b), "<head>", "<head>\n"+checkScript, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	run := func(args ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile, "--no-first-run",
			"--allow-file-access-from-files", "--enable-logging=stderr", "--v=0"}, args...)
		cmd := exec.CommandContext(ctx, browser, args...)
		cmd.Env = append(os.Environ(), "HOME="+profile)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	// 1,400 px: a laptop's browser window; the tables must fit it whole
	// (a scrollbar would hide their right-hand columns, drift and shares).
	dom, stderr := run("--window-size=1400,1000", "--virtual-time-budget=10000", "--dump-dom", "file://"+check)
	m := regexp.MustCompile(`(?s)<pre id="monagent-check">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's check did not run; chromium said:\n%s", stderr)
	}
	var res struct {
		Images         int
		Broken         []string
		Errors         []string
		Viewport, Page int
		Height         int
		Overflow       []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &res); err != nil {
		t.Fatalf("%v: %s", err, m[1])
	}
	t.Logf("chromium: %d images, broken %v, console errors %v", res.Images, res.Broken, res.Errors)
	if res.Images != 12 || len(res.Broken) > 0 || len(res.Errors) > 0 {
		t.Errorf("%d images (want 12), broken %q, console errors %q", res.Images, res.Broken, res.Errors)
	}
	t.Logf("chromium: viewport %d px, page %d px wide", res.Viewport, res.Page)
	if res.Viewport != 1400 {
		t.Errorf("viewport %d px, want 1400 (--window-size)", res.Viewport)
	}
	if res.Page > res.Viewport || len(res.Overflow) > 0 {
		t.Errorf("at %d px the page is %d px wide and these do not fit (scroll): %q", res.Viewport, res.Page, res.Overflow)
	}
	// Chromium writes what reaches the console to stderr (--enable-logging,
	// ":CONSOLE" lines, whatever the level); the page has no script and the
	// check logs nothing, so there must be none.
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console: %s", l)
		}
	}
	art := os.Getenv("MONAGENT_TEST_ARTIFACTS")
	if art == "" {
		art = filepath.Join(os.TempDir(), "monagent-test-artifacts")
	}
	art = filepath.Join(art, t.Name())
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(art, "index.png")
	// The whole page, every plot in it, at the width checked above.
	height := min(max(res.Height, 1000), 30000)
	run("--hide-scrollbars", fmt.Sprintf("--window-size=1400,%d", height), "--screenshot="+shot, "file://"+filepath.Join(dir, "index.html"))
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot of the page: %s", shot)
}

// TestHTMLEscapes: every value on the hand-built page is escaped, in text
// and in attributes, as html/template escaped it.
func TestHTMLEscapes(t *testing.T) {
	bad := `<script>alert("x")</script> & 'q' +1`
	want := `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;q&#39; &#43;1`
	p := htmlPage{Title: bad, Header: []safeHTML{htmlCell(bad)}, Rows: [][]safeHTML{{htmlCell(bad)}}, Notes: []string{bad}, Sensor: bad, Unit: bad,
		Correlations: []htmlCorrelation{{Series: bad, Coefficient: bad, Notes: []string{bad}}, {Series: bad, Error: bad}}, NoPlots: bad,
		Series: []htmlSeries{{Name: bad, ID: bad, Images: []PlotImage{{Caption: bad, PNG: bad, SVG: bad}}, Missing: []PlotMissing{{Caption: bad, Reason: bad}},
			Stability: []htmlStability{{Tau: htmlCell(bad), N: 3, K: 1}}}}}
	var b bytes.Buffer
	p.write(&b)
	page := b.String()
	if strings.Contains(page, "<script") || strings.Contains(page, `"x"`) || strings.Contains(page, "'q'") {
		t.Fatalf("unescaped:\n%s", page)
	}
	// 21 values escaped as text or attributes (the title twice, each
	// image's SVG and caption twice); the cells (spaces made non-breaking)
	// 3 more.
	if n := strings.Count(page, want); n != 21 {
		t.Errorf("%d escaped values, want 21:\n%s", n, page)
	}
	if n := strings.Count(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&nbsp;&amp;&nbsp;&#39;q&#39;&nbsp;+1"); n != 3 {
		t.Errorf("%d escaped cells, want 3:\n%s", n, page)
	}
}
