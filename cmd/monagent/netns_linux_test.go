package main

import (
	"bytes"
	"testing"

	"github.com/monagent/monagent/internal/testbed"
)

// runIn runs monagent inside a test host's network namespace for duration and
// returns its standard output and error.
func runIn(t *testing.T, h *testbed.Host, dir, cfg, duration string) (string, string) {
	t.Helper()
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg, "--duration", duration)
	cmd := h.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("monagent: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}
