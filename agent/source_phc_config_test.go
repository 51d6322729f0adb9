package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On the board, two entries may name one PHC under different names: a
// device and the interface that owns it, or the two ports of one NIC (the
// BeagleBone's CPSW shares its CPTS). Preflight, and so run and config
// check, refuses each later entry naming the first (the same name twice is
// refused without the board: config_dup_test.go).
func TestPHCConfigRefusesOnePHCNamedTwiceOnTheBoard(t *testing.T) {
	root := t.TempDir()
	sys, dev := filepath.Join(root, "sys"), filepath.Join(root, "dev")
	files := map[string]string{
		"class/ptp/ptp0/clock_name": "CTPS timer", "class/ptp/ptp0/max_adjustment": "1000000",
		"class/ptp/ptp0/n_external_timestamps": "4", "class/ptp/ptp0/n_periodic_outputs": "1",
		"class/ptp/ptp0/n_programmable_pins": "0", "class/ptp/ptp0/pps_available": "1",
		"class/net/eth0/device/ptp/ptp0/clock_name": "CTPS timer", "class/net/eth1/device/ptp/ptp0/clock_name": "CTPS timer",
		"class/net/eth2/flags": "0x1003",
	}
	for name, body := range files {
		p := filepath.Join(sys, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "ptp0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		devices    []string
		interfaces []string
		want       []string
	}{
		{"device and its interface", []string{filepath.Join(dev, "ptp0")}, []string{"eth0"},
			[]string{"phc.interfaces[0]: eth0's PHC is " + filepath.Join(dev, "ptp0") + ", named already: list each PHC once (phc.devices[0])"}},
		{"two ports of one NIC", nil, []string{"eth2", "eth0", "eth1"},
			[]string{"phc.interfaces[2]: eth1's PHC is " + filepath.Join(dev, "ptp0") + ", named already: list each PHC once (phc.interfaces[1])"}},
		{"one each", nil, []string{"eth0", "eth2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Paths.Sys, c.Paths.Dev = sys, dev
			c.PHC.Devices, c.PHC.Interfaces = tc.devices, tc.interfaces
			var got []string
			for _, ke := range problemsOf(c.Preflight()) {
				got = append(got, strings.TrimPrefix(ke.Error(), "config: "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("preflight:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
	var ke *KeyError
	c := Default()
	c.Paths.Sys, c.Paths.Dev = sys, dev
	c.PHC.Interfaces = []string{"eth0", "eth1"}
	if err := c.Preflight(); !errors.As(err, &ke) || ke.Also != "phc.interfaces[0]" {
		t.Errorf("preflight: %v", err)
	}
}
