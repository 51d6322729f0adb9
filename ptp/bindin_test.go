package ptp

import (
	"path/filepath"
	"testing"
)

// The monitor's and the subscriber's own sockets go where they are told
// (the agent's runtime directory), else beside ptp4l's.
func TestLocalSocketsBindInTheGivenDir(t *testing.T) {
	m := NewMonitor("/var/run/ptp4l", 0, 0)
	if got := filepath.Dir(m.LocalSocket()); got != "/var/run" {
		t.Errorf("monitor's socket in %s, want beside ptp4l's", got)
	}
	m.BindIn("/run/monagent")
	if got := filepath.Dir(m.LocalSocket()); got != "/run/monagent" {
		t.Errorf("monitor's socket in %s after BindIn", got)
	}
	if got := filepath.Dir(NewSubscriber("/var/run/ptp4l", SubscribeConfig{Dir: "/run/monagent"}).LocalSocket()); got != "/run/monagent" {
		t.Errorf("subscriber's socket in %s", got)
	}
}
