package agent

import (
	"strings"
	"testing"
)

// Every source's interval has a lower bound (conf.MinInterval, 10 ms):
// clock.interval: 1ns passed config check and wrote 330,000 points in 3 s.
// 10 ms itself is taken.
func TestSourceIntervalsHaveAFloor(t *testing.T) {
	for _, c := range []struct{ key, yaml string }{
		{"clock.interval", "clock:\n  interval: %s\n"},
		{"phc.interval", "phc:\n  interval: %s\n"},
		{"sensors.interval", "sensors:\n  interval: %s\n"},
		{"self_metrics.interval", "self_metrics:\n  interval: %s\n"},
		{"ntp.chrony.interval", "ntp:\n  enabled: true\n  chrony:\n    enabled: true\n    interval: %s\n"},
		{"ntp.ntpd.interval", "ntp:\n  enabled: true\n  ntpd:\n    enabled: true\n    interval: %s\n"},
		{"ptp.ptp4l.interval", "ptp:\n  enabled: true\n  ptp4l:\n    enabled: true\n    interval: %s\n"},
		{"gpio.interval", "gpio:\n  enabled: true\n  interval: %s\n"},
		{"pps.interval", "pps:\n  enabled: true\n  interval: %s\n"},
		{"extts.interval", "extts:\n  enabled: true\n  interval: %s\n"},
		{"marker.interval", "marker:\n  enabled: true\n  interval: %s\n"},
		{"gnss.interval", "gnss:\n  enabled: true\n  interval: %s\n"},
		{"hca.interval", "hca:\n  enabled: true\n  interval: %s\n"},
		{"loadgen.interval", "loadgen:\n  enabled: true\n  interval: %s\n"},
	} {
		_, err := Parse("x.yaml", []byte(strings.Replace(c.yaml, "%s", "1ns", 1)))
		if err == nil || !strings.Contains(err.Error(), c.key+": must be at least 10ms") {
			t.Errorf("%s: 1ns: %v", c.key, err)
		}
		if _, err := Parse("x.yaml", []byte(strings.Replace(c.yaml, "%s", "10ms", 1))); err != nil && strings.Contains(err.Error(), c.key+":") {
			t.Errorf("%s: 10ms refused: %v", c.key, err)
		}
	}
}

// A trailing --- (an empty second document) holds nothing to ignore: taken.
func TestTrailingDocumentMarkerTaken(t *testing.T) {
	for _, y := range []string{"clock:\n  interval: 1s\n---\n", "---\nclock:\n  interval: 1s\n", ""} {
		if _, err := Parse("x.yaml", []byte(y)); err != nil {
			t.Errorf("%q: %v", y, err)
		}
	}
}
