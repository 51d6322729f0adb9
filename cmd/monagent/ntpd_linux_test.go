package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/timebase"
)

// TestRunNtpdJudgedFreerun (issue 24): monagent runs in the namespace of an
// NTPsec ntpd, client of a chronyd server across a veth pair, with the ntpd
// monitor on. It ships ntpd_system and an ntpd_peer for the chronyd upstream
// (ntpd's sys.peer), and judges the system clock as ntpd sees it: ntpd runs
// with `disable ntp` (the test's ntpd must never steer the clock), so it
// selects the upstream but never updates the clock and keeps leap indicator
// 3 (alarm): the judge goes from UNKNOWN to FREERUN, "source not
// synchronised", and stays there. The kernel's clock discipline is untouched.
func TestRunNtpdJudgedFreerun(t *testing.T) {
	srv, cli := testbed.NewLink(t)
	before, err := timebase.ReadKernelState()
	if err != nil {
		t.Fatal(err)
	}
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	nd := testbed.StartNtpd(t, cli, testbed.NtpdClientConf(srv.Addr.String(), 0))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out, _ := nd.Ntpq("-c", "as")
		if strings.Contains(out, "sys.peer") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ntpd selected no system peer within 30 s:\n%s\n%s", out, nd.LogText())
		}
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: false}
phc: {enabled: false}
ntp:
  enabled: true
  ntpd:
    enabled: true
    address: %s
    interval: 1s
output: {stdout: true}
spool: {enabled: false}
self_metrics: {interval: 1s}
`, testbed.NtpdAddr))
	// 5 s, and on until 3 of each record came (it was 5 s, which a loaded
	// or emulated machine may spend mostly starting the agent).
	count := func(text, prefix string, subs ...string) (n int) {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, prefix) && !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(l, s) }) {
				n++
			}
		}
		return n
	}
	text, stderr := runInUntil(t, cli, dir, cfg, 5*time.Second, func(out string) bool {
		return count(out, "ntpd_system,") >= 3 && count(out, "ntpd_peer,") >= 3 &&
			count(out, "sync_state,clock=system,", ",source=ntpd ") >= 1 && count(out, "", "source=ntpd", "timeouts=") >= 1
	})
	var system, peer, freerun, self int
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "ntpd_system,"):
			system++
			if !strings.Contains(l, "leap=3i") || !strings.Contains(l, "stratum=2i") || !strings.Contains(l, `reference_id="`+srv.Addr.String()+`"`) {
				t.Errorf("ntpd_system: %s", l)
			}
		case strings.HasPrefix(l, "ntpd_peer,"):
			peer++
			// Line protocol sorts the tags: association, host, peer, selection.
			if !strings.HasPrefix(l, "ntpd_peer,association=") || !strings.Contains(l, ",peer="+srv.Addr.String()+",selection=sys.peer ") || !strings.Contains(l, "stratum=1i") {
				t.Errorf("ntpd_peer: %s", l)
			}
		case strings.HasPrefix(l, "sync_state,clock=system,") && strings.Contains(l, ",source=ntpd "):
			if !strings.Contains(l, `to="FREERUN"`) || !strings.Contains(l, `reason="source not synchronised"`) {
				t.Errorf("the judge of the system clock under ntpd's disable ntp: %s", l)
			}
			freerun++
		case strings.Contains(l, "source=ntpd") && strings.Contains(l, "timeouts="):
			self++
			for _, bad := range []string{"stale_replies=0", "error_replies=0", "truncated_replies=0", "malformed_replies=0", "timeouts=0"} {
				if !strings.Contains(l, bad) {
					t.Errorf("self-metrics of a healthy ntpd: want %s in %s", bad, l)
				}
			}
		}
	}
	if system < 3 || peer < 3 || freerun != 1 || self == 0 {
		t.Errorf("%d ntpd_system, %d ntpd_peer, %d transitions to FREERUN, %d self-metrics at 1 s", system, peer, freerun, self)
	}
	// (The collection under way when the run ends fails with the run's
	// cancellation: not a fault of ntpd's.)
	for _, bad := range []string{"malformed", "truncated", "error reply", "another request", " within "} {
		if strings.Contains(stderr, bad) {
			t.Errorf("the ntpd source failed (%s):\n%s", bad, stderr)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", text, stderr)
	}
	nd.Stop()
	after, err := timebase.ReadKernelState()
	if err != nil {
		t.Fatal(err)
	}
	if after.FreqPPB != before.FreqPPB || after.Status != before.Status || after.OffsetNS != before.OffsetNS || after.Constant != before.Constant {
		t.Errorf("the kernel's clock discipline changed while ntpd ran:\nbefore %+v\nafter  %+v", before, after)
	}
}
