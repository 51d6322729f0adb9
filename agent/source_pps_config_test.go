package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/phc"
)

func TestPPSExttsConfigDefaultsAndDecode(t *testing.T) {
	c, err := Parse("x.yaml", []byte(`pps:
  enabled: true
  devices:
    - device: /dev/pps0
    - {device: pps1, name: gnss, clear: true, assert: false, ring: 16}
extts:
  enabled: true
  phc: /dev/ptp1
  channels:
    - {channel: 0, name: pps_in, period: 1s}
    - {channel: 2, pin: 3, edges: both}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.PPS
	if !p.Enabled || p.Interval != time.Second || len(p.Devices) != 2 {
		t.Fatalf("pps %+v", p)
	}
	if want := (PPSDeviceConfig{Device: "/dev/pps0", Assert: true, Ring: 64}); p.Devices[0] != want {
		t.Errorf("devices[0] %+v, want %+v", p.Devices[0], want)
	}
	if want := (PPSDeviceConfig{Device: "pps1", Name: "gnss", Clear: true, Ring: 16}); p.Devices[1] != want {
		t.Errorf("devices[1] %+v, want %+v", p.Devices[1], want)
	}
	if p.Devices[0].tagName() != "pps0" || p.Devices[1].tagName() != "gnss" {
		t.Errorf("tag names %q, %q", p.Devices[0].tagName(), p.Devices[1].tagName())
	}
	x := c.Extts
	if !x.Enabled || x.Interval != time.Second || x.PHC != "/dev/ptp1" || x.Ring != 1024 {
		t.Fatalf("extts %+v", x)
	}
	want := []ExttsChannelConfig{
		{Channel: 0, Pin: phc.NoPin, Edges: "rising", Name: "pps_in", Period: time.Second},
		{Channel: 2, Pin: 3, Edges: "both"},
	}
	if !reflect.DeepEqual(x.Channels, want) {
		t.Errorf("channels %+v, want %+v", x.Channels, want)
	}
	if r := x.Channels[1].request(); r != (phc.ExttsChannel{Channel: 2, Pin: 3, Edges: phc.EdgeBoth}) {
		t.Errorf("request %+v", r)
	}
	if r := x.Channels[0].request(); r.PeriodNS != 1e9 || r.Edges != phc.EdgeRising {
		t.Errorf("request %+v", r)
	}
	if d := Default(); d.PPS.Enabled || d.Extts.Enabled || d.Extts.PHC != "/dev/ptp0" {
		t.Errorf("defaults pps %+v extts %+v", d.PPS, d.Extts)
	}
}

func TestPPSExttsConfigCheckNamesKeyAndReason(t *testing.T) {
	_, err := Parse("x.yaml", []byte(`pps:
  enabled: true
  interval: 0s
  devices:
    - {device: /dev/pps0, ring: 100}
    - {device: pps0, assert: false}
    - {device: /dev/rtc0}
    - {name: x}
extts:
  enabled: true
  phc: /dev/rtc0
  ring: 3
  channels:
    - {channel: -1, pin: -2, edges: up, period: -1s}
    - {channel: 1, pin: 4}
    - {channel: 1, pin: 4}
`))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: %v, want Problems", err)
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Key] += p.Reason + ";"
	}
	want := map[string]string{
		"pps.interval":              "must be at least 10ms",
		"pps.devices[0].ring":       "not a power of two",
		"pps.devices[1].device":     "also pps.devices[0]",
		"pps.devices[1]":            "neither assert nor clear",
		"pps.devices[2].device":     "not a PPS device",
		"pps.devices[3].device":     "must be set",
		"extts.phc":                 "not a PHC device",
		"extts.ring":                "not a power of two",
		"extts.channels[0].channel": "must not be negative",
		"extts.channels[0].pin":     "or -1",
		"extts.channels[0].edges":   `"up": want both, falling, rising`,
		"extts.channels[0].period":  "must not be negative",
		"extts.channels[2].channel": "channel 1 is also extts.channels[1]",
		"extts.channels[2].pin":     "pin 4 is also extts.channels[1]'s",
	}
	for k, reason := range want {
		if !strings.Contains(got[k], reason) {
			t.Errorf("%s: %q, want it to say %q", k, got[k], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems at %d keys, want %d: %v", len(got), len(want), got)
	}
	// Sections that are off are not checked.
	if _, err := Parse("x.yaml", []byte("pps:\n  devices: [{device: x}]\nextts:\n  phc: nope\n")); err != nil {
		t.Errorf("disabled sections: %v", err)
	}
	for _, s := range []string{"pps:\n  enabled: true\n", "extts:\n  enabled: true\n"} {
		_, err := Parse("x.yaml", []byte(s))
		var ke *KeyError
		if !errors.As(err, &ke) || (ke.Key != "pps.devices" && ke.Key != "extts.channels") {
			t.Errorf("%q: %v, want a problem at the empty list", s, err)
		}
	}
}

func TestPPSExttsConfigBoard(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pps1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.Paths.Dev = dir
	c.PPS = PPSConfig{Enabled: true, Interval: time.Second, Devices: []PPSDeviceConfig{
		{Device: "pps0", Assert: true, Ring: 64}, {Device: "pps1", Assert: true, Ring: 64}}}
	c.Extts.Enabled = true
	c.Extts.PHC = filepath.Join(dir, "ptp3")
	c.Extts.Channels = []ExttsChannelConfig{{Pin: phc.NoPin, Edges: "rising"}}
	var keys []string
	for _, ke := range c.Board() {
		if strings.HasPrefix(ke.Key, "pps") || strings.HasPrefix(ke.Key, "extts") {
			if !ke.Warning || !strings.Contains(ke.Reason, "needs the board") {
				t.Errorf("%s: %v is not a board warning", ke.Key, ke)
			}
			keys = append(keys, ke.Key)
		}
	}
	if want := []string{"pps.devices[0].device", "extts.phc"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("board problems at %v, want %v", keys, want)
	}
	// Absent devices do not stop run: neither section is fatal.
	for _, ke := range problemsOf(c.Preflight()) {
		if strings.HasPrefix(ke.Key, "pps") || strings.HasPrefix(ke.Key, "extts") {
			t.Errorf("preflight fails on %v", ke)
		}
	}
}

func problemsOf(err error) Problems {
	var ps Problems
	errors.As(err, &ps)
	return ps
}
