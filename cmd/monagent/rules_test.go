package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAlertRules: the shipped alert and fleet rules pass promtool's check and
// their unit tests (configs/prometheus/tests/monagent-rules_test.yml and
// monagent-fleet_test.yml: each alert fires when it should, and not before,
// with its labels and annotations; the fleet's recording rules give the
// medians and deviations they name).
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: prometheus): the alert rules are not checked")
	}
	for _, args := range [][]string{
		{"check", "rules", "monagent-rules.yml", "monagent-fleet.yml"},
		{"test", "rules", "tests/monagent-rules_test.yml", "tests/monagent-fleet_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../../configs/prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
