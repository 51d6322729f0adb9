package agent

import (
	"errors"
	"reflect"
	"testing"

	"github.com/monagent/monagent/phc"
)

func TestResolvePHCs(t *testing.T) {
	discover := func(phc.Paths) ([]phc.Info, error) {
		return []phc.Info{{Index: 0, Device: "/dev/ptp0"}, {Index: 2, Device: "/dev/ptp2"}}, nil
	}
	iface := func(name string) (int, error) {
		switch name {
		case "eth0":
			return 2, nil
		case "lo":
			return -1, nil
		}
		return -1, errors.New("no such device")
	}
	cfg := Default()
	got, err := resolvePHCs(&cfg, discover, iface)
	if err != nil || !reflect.DeepEqual(got, []string{"/dev/ptp0", "/dev/ptp2"}) {
		t.Fatalf("all: %v %v", got, err)
	}
	cfg.PHC.Devices = []string{"/dev/ptp2"}
	cfg.PHC.Interfaces = []string{"eth0"}
	if got, err := resolvePHCs(&cfg, discover, iface); err != nil || !reflect.DeepEqual(got, []string{"/dev/ptp2"}) {
		t.Fatalf("device and its interface: %v %v", got, err)
	}
	cfg.PHC.Interfaces = []string{"lo"}
	if _, err := resolvePHCs(&cfg, discover, iface); err == nil || err.Error() != "config: phc.interfaces[0]: interface lo has no PTP hardware clock" {
		t.Fatalf("interface without PHC: %v", err)
	}
}

// The first open of a PHC is not a reopen; each later one is.
func TestPHCFirstOpenIsNotAReopen(t *testing.T) {
	s := &phcSource{}
	if s.noteOpen() || s.reopens != 0 {
		t.Fatalf("first open counted as a reopen (%d)", s.reopens)
	}
	if !s.noteOpen() || !s.noteOpen() || s.reopens != 2 {
		t.Fatalf("reopens %d after three opens, want 2", s.reopens)
	}
}
