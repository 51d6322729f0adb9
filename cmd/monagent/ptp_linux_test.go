package main

import (
	"fmt"
	"strings"
	"testing"

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
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock:
  enabled: false
phc:
  enabled: false
ptp:
  enabled: true
  ptp4l:
    enabled: true
    socket: %s
  probe:
    enabled: true
    interface: %s
output:
  stdout: true
spool:
  enabled: false
`, slave.Socket, hosts[2].If))
	text, stderr := runIn(t, hosts[2], dir, cfg, "14s")
	for _, want := range []string{
		"ptp4l_current,host=", "mean_path_delay_ns=", "ptp4l_parent,", "ptp4l_time_status,", "gm_present=",
		"ptp4l_port,", "port_state=", "ptp4l_port_stats,", "ptp_probe,", "offset_ns=", "path_delay_ns=", "ptp_probe_stats,",
		"rejected_foreign=", "port_service_stats_unsupported=true",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", text, stderr)
	}
}
