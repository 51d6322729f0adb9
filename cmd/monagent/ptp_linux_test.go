package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestRunPTPAgainstPtp4l runs monagent on a bridge with a ptp4l master and a
// free-running ptp4l slave: its probe measures the master from a namespace of
// its own while its monitor reads the slave's management socket.
func TestRunPTPAgainstPtp4l(t *testing.T) {
	if len(prefix) > 0 {
		t.Skip("qemu-user emulates neither packet timestamps nor IP_MULTICAST_IF: the probe cannot run under it")
	}
	hosts := testbed.NewBridge(t, 3)
	testbed.StartPtp4l(t, hosts[0], testbed.Ptp4lOptions{Master: true})
	slave := testbed.StartPtp4l(t, hosts[1], testbed.Ptp4lOptions{})
	dir := t.TempDir()
	cfg := writeConfig(t, dir, ptpConfig(fmt.Sprintf(`
  ptp4l:
    enabled: true
    socket: %s
  probe:
    enabled: true
    interface: %s
`, slave.Socket, hosts[2].If)))
	wants := []string{
		"ptp4l_current,host=", "mean_path_delay_ns=", "ptp4l_parent,", "ptp4l_time_status,", "gm_present=",
		"ptp4l_port,", "port_state=", "ptp4l_port_stats,", "ptp_probe,", "offset_ns=", "path_delay_ns=", "ptp_probe_stats,",
		"rejected_foreign=", "port_service_stats_unsupported=true", "timestamps=software/software", "untranslated=0i",
		// Both judged: ptp4l's clock, and the system clock against the master
		// the probe follows (software stamps over veth: bounds of tens of µs).
		"sync_state,clock=ptp4l,", "sync_state,clock=system,host=", "source=ptp_probe:" + hosts[2].If,
	}
	srcs := []string{"ptp4l:" + slave.Socket, "ptp_probe:" + hosts[2].If}
	locked := func(text, src string) bool {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "sync_state,") && strings.Contains(l, ",source="+src+" ") && strings.Contains(l, `to="LOCKED"`) {
				return true
			}
		}
		return false
	}
	// 14 s, and on until every record came and both clocks were LOCKED (it
	// was 14 s, in which a loaded machine's slave may not lock).
	text, stderr := runInUntil(t, hosts[2], dir, cfg, 14*time.Second, func(out string) bool {
		return !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(out, w) }) &&
			!slices.ContainsFunc(srcs, func(src string) bool { return !locked(out, src) })
	})
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, src := range srcs {
		if !locked(text, src) {
			t.Errorf("no sync_state of %s to LOCKED", src)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", text, stderr)
	}
}

// TestRunL2WithoutCapNetRaw: the IEEE 802.3 probe needs a raw socket; run as
// an unprivileged user, monagent says so in one line and exits 2.
func TestRunL2WithoutCapNetRaw(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start monagent as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	_, h := testbed.NewLink(t) // an interface with a MAC address
	dir, err := os.MkdirTemp("", "monagent-l2perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// nobody must reach the binary and the config.
	for _, d := range []string{dir, filepath.Dir(bin)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfig(t, dir, ptpConfig(`
  probe:
    enabled: true
    interface: `+h.If+`
    transport: l2
`))
	argv := append(append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, prefix...), bin, "run", "--config", cfg, "--duration", "1s", "--http", "127.0.0.1:0")
	cmd := h.Command(setpriv, argv...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	if !strings.Contains(string(out), "CAP_NET_RAW") || !strings.Contains(string(out), "ptp.probe") {
		t.Errorf("the error does not name the key and the capability:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// ptpConfig is a config with only the ptp section (its body given), records
// to stdout and no spool.
func ptpConfig(ptpBody string) string {
	return "clock:\n  enabled: false\nphc:\n  enabled: false\nptp:\n  enabled: true" + ptpBody +
		"output:\n  stdout: true\nspool:\n  enabled: false\n"
}
