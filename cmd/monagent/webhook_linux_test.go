package main

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestWebhookSecretsStayInTheConfig (issue 33 item 2) runs the agent with
// two webhooks whose URLs carry a secret in the path and the query: one
// answers a 307 to another URL (which carries a secret too), the other
// refuses connections. The NTP probe's silent server makes the system
// clock FREERUN, so each webhook is sent an event and fails. The
// secrets must appear nowhere: /metrics, the records (stdout and the
// spool's segments, uncompressed), the log. The receivers are named by
// index and host; the redirect is not followed. And config check refuses
// user info in a webhook's URL without printing the password.
func TestWebhookSecretsStayInTheConfig(t *testing.T) {
	const secretPath, secretQuery = "/services/T0PATHSECRET/B0PATHSECRET", "token=TOPSECRET"
	// One receiver redirects every request to a path of its own whose
	// URL carries another secret; the other's port has no listener.
	var hits, elsewhere atomic.Int64
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved/") {
			elsewhere.Add(1)
			return
		}
		hits.Add(1)
		http.Redirect(w, r, "/moved/ELSEWHERESECRET?token=TOPSECRET", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	refusing := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	silentNTP := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t)) // no answer: the clock goes FREERUN, an event for each webhook

	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	redirHost := strings.TrimPrefix(redirecting.URL, "http://")
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: false}
phc: {enabled: false}
ntp:
  enabled: true
  timeout: 300ms
  servers: [{address: "%s", interval: 1s}]
output: {stdout: true}
spool: {dir: %s, compress: false, flush_interval: 100ms}
self_metrics: {interval: 500ms}
notify:
  webhooks: ["%s", "http://%s%s?%s"]
  timeout: 1s
  max_backoff: 200ms
`, silentNTP, filepath.Join(dir, "spool"), redirecting.URL+secretPath+"?"+secretQuery, refusing, secretPath, secretQuery))
	if out, stderr, code := run(t, dir, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: %s%s", out, stderr)
	}

	cmd := command("run", "--config", cfg, "--duration", "60s", "--http", addr)
	cmd.Dir = dir
	stdout, _ := os.Create(filepath.Join(dir, "stdout.lp"))
	logf, _ := os.Create(filepath.Join(dir, "agent.log"))
	defer stdout.Close()
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = stdout, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	defer logOnFailure(t, filepath.Join(dir, "agent.log"))

	// Until both receivers have given up an event (the redirect at once,
	// the refused one after its attempts) and /metrics shows it.
	scrape := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	want := []string{
		`monagent_notify_dropped_total{receiver="0",receiver_host="` + redirHost + `"} 1`,
		`monagent_notify_dropped_total{receiver="1",receiver_host="` + refusing + `"} 1`,
	}
	var metrics string
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		metrics = scrape()
		if strings.Contains(metrics, want[0]) && strings.Contains(metrics, want[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("45 s on, /metrics lacks %q:\n%s", want, grepLines(metrics, "monagent_notify_dropped"))
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent: %v", err)
	}
	records, _ := os.ReadFile(filepath.Join(dir, "stdout.lp"))
	log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
	var spooled []byte
	filepath.WalkDir(filepath.Join(dir, "spool"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			spooled = append(spooled, b...)
		}
		return nil
	})
	for what, text := range map[string]string{"/metrics": metrics, "the records on stdout": string(records), "the spool": string(spooled), "the log": string(log)} {
		for _, secret := range []string{"TOPSECRET", "PATHSECRET", "ELSEWHERESECRET", "/services"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %s: %s", what, secret, grepLines(text, secret))
			}
		}
	}
	for what, text := range map[string]string{"the records on stdout": string(records), "the spool": string(spooled)} {
		if !strings.Contains(text, "monagent_notify,host=") || !strings.Contains(text, ",receiver=0,receiver_host="+redirHost+" ") ||
			!strings.Contains(text, `last_error="webhook 0 (`+redirHost+`): HTTP 307`) {
			t.Errorf("%s lack the receivers' records:\n%s", what, grepLines(text, "monagent_notify"))
		}
	}
	if !strings.Contains(string(log), "webhook 0 ("+redirHost+") failed") || !strings.Contains(string(log), "webhook 1 ("+refusing+") failed") {
		t.Errorf("the log does not say which webhook fails")
	}
	if elsewhere.Load() != 0 || hits.Load() < 1 {
		t.Errorf("the redirecting receiver got %d requests, the URL it redirects to %d (want none)", hits.Load(), elsewhere.Load())
	}

	// config check refuses user info, naming the key, not the password.
	bad := writeConfig(t, t.TempDir(), "phc: {enabled: false}\nnotify:\n  webhooks: [\"http://alice:S3cretPass@127.0.0.1:9/h?token=TOPSECRET\"]\n")
	out, stderr, code := run(t, dir, "config", "check", bad)
	if code == 0 || !strings.Contains(out, "notify.webhooks[0]: the URL for 127.0.0.1:9 holds credentials") ||
		strings.Contains(out+stderr, "S3cretPass") || strings.Contains(out+stderr, "TOPSECRET") {
		t.Errorf("config check with user info in a webhook's URL: exit %d\n%s%s", code, out, stderr)
	}
}

// grepLines is text's lines that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
