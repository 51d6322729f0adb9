package agent

import (
	"strings"
	"testing"
)

// config check warns (never errs) when the system clock will have one
// judged reference: not cross-checked. Two or more, or none, say nothing.
func TestConfigCheckWarnsNotCrossChecked(t *testing.T) {
	const head = "clock:\n  enabled: false\nphc:\n  enabled: false\n"
	cases := []struct {
		name, yaml string
		key        string // "" for no warning
		line       int
	}{
		{"one server", head + "ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n", "ntp.servers[0]", 8},
		{"three servers", head + "ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n    - address: 10.0.0.2\n    - address: 10.0.0.3\n", "", 0},
		{"one server, its judge off", head + "ntp:\n  enabled: true\n  judge:\n    enabled: false\n  servers:\n    - address: 10.0.0.1\n", "", 0},
		{"chronyd alone", head + "ntp:\n  enabled: true\n  chrony:\n    enabled: true\n", "ntp.chrony", 7},
		{"chronyd and a server", head + "ntp:\n  enabled: true\n  chrony:\n    enabled: true\n  servers:\n    - address: 10.0.0.1\n", "", 0},
		{"the PTP probe alone", head + "ptp:\n  enabled: true\n  probe:\n    enabled: true\n    interface: eth0\n", "ptp.probe", 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("x.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			var got []*KeyError
			for _, p := range cfg.Board() {
				if strings.Contains(p.Reason, "not cross-checked") {
					got = append(got, p)
				}
			}
			switch {
			case c.key == "" && len(got) > 0:
				t.Fatalf("warned: %v", got)
			case c.key == "":
			case len(got) != 1 || got[0].Key != c.key || !got[0].Warning || got[0].Line != c.line:
				t.Fatalf("got %v, want one warning at %s line %d", got, c.key, c.line)
			default:
				t.Log(got[0])
			}
		})
	}
}
