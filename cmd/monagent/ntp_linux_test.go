package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestRunNTPAgainstChronyd runs monagent inside a client namespace: its NTP probe
// measures a chronyd server across a veth pair while its chrony monitor reads a
// chronyd client (-x) next to it.
func TestRunNTPAgainstChronyd(t *testing.T) {
	srv, cli := testbed.NewLink(t)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	client := testbed.StartChronyd(t, cli, testbed.ChronydClientConf(srv.Addr.String(), 0, ""))
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock:
  enabled: false
phc:
  enabled: false
ntp:
  enabled: true
  servers:
    - address: %s
      interval: 1s
  chrony:
    enabled: true
    socket: %s
    interval: 1s
output:
  stdout: true
spool:
  enabled: false
`, srv.Addr, client.Socket))
	stamps := "timestamps=software/software"
	if len(prefix) > 0 { // qemu-user emulates no SO_TIMESTAMPING: labelled user-space timestamps
		stamps = "timestamps=user/user"
	}
	wants := []string{
		"ntp_probe,host=", "server=" + srv.Addr.String() + ":123", stamps, "offset_ns=", "bytes_per_s=",
		"ntp_sample,", "chrony_tracking,", "chrony_source,", "chrony_serverstats,",
	}
	// 6 s, and on until every record came (it was 6 s, however slowly a
	// loaded machine started the agent).
	text, stderr := runInUntil(t, cli, dir, cfg, 6*time.Second, func(out string) bool {
		return !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(out, w) })
	})
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(text, "last_error=\"ntp") {
		t.Errorf("ntp source reported errors:\n%s", text)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", text, stderr)
	}
}
