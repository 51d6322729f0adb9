package agent

import (
	"strings"
	"testing"
	"time"
)

// TestNtpdSection: ntp.ntpd's defaults (off, 127.0.0.1:123, 8 s, judged as
// ntp.chrony.judge) and its checks, each at its key.
func TestNtpdSection(t *testing.T) {
	c, err := Parse("x.yaml", []byte("ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	n := *c.NTP.Ntpd.First()
	if n.Address != "127.0.0.1:123" || n.Interval != 8*time.Second || n.Judge != ntpJudge(1) || n.Judge != c.NTP.Chrony.First().Judge {
		t.Fatalf("ntp.ntpd defaults %+v", n)
	}
	if d := Default(); d.NTP.Ntpd.First().Enabled {
		t.Fatal("ntp.ntpd on by default")
	}
	for _, bad := range []struct{ yaml, want string }{
		{"ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n    address: localhost\n", `x.yaml:5: ntp.ntpd.address: want ntpd's IP:port (mode 6 over UDP, e.g. 127.0.0.1:123), got "localhost"`},
		{"ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n    address: 127.0.0.1:99999\n", `x.yaml:5: ntp.ntpd.address: want ntpd's IP:port`},
		{"ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n    interval: 0s\n", "x.yaml:5: ntp.ntpd.interval: "},
		{"ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n    judge: {threshold: 0s}\n", "x.yaml:5: ntp.ntpd.judge.threshold"},
		{"ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n    adress: 127.0.0.1:123\n", "x.yaml:5: ntp.ntpd.adress: unknown key"},
	} {
		if _, err := Parse("x.yaml", []byte(bad.yaml)); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
