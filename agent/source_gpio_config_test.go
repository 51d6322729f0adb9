package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/gpio"
)

func TestGPIOConfigDefaultsAndDecode(t *testing.T) {
	c, err := Parse("x.yaml", []byte(`gpio:
  enabled: true
  phc: /dev/ptp0
  chips:
    - chip: gpiochip0
      lines:
        - {offset: 17, name: pps_in, edge: rising}
        - {offset: 18, bias: pull_up, active_low: true, debounce: 10us, clock: realtime}
`))
	if err != nil {
		t.Fatal(err)
	}
	g := c.GPIO
	if !g.Enabled || g.Interval != time.Second || g.PHC != "/dev/ptp0" || len(g.Chips) != 1 {
		t.Fatalf("gpio %+v", g)
	}
	ch := g.Chips[0]
	if ch.Buffer != gpio.MaxEventBufferSize || ch.Ring != 4096 || ch.Replay != "" {
		t.Errorf("chip defaults %+v", ch)
	}
	want := []GPIOLineConfig{
		{Offset: 17, Name: "pps_in", Edge: "rising", Bias: "as_is", Clock: "monotonic"},
		{Offset: 18, Edge: "both", Bias: "pull_up", ActiveLow: true, Debounce: 10 * time.Microsecond, Clock: "realtime"},
	}
	if !reflect.DeepEqual(ch.Lines, want) {
		t.Errorf("lines %+v, want %+v", ch.Lines, want)
	}
	// Lines with different settings are different requests.
	if got := groupGPIOLines(ch); len(got) != 2 {
		t.Errorf("%d requests, want 2", len(got))
	}
	if lc := ch.Lines[1].lineConfig(); lc.Bias != gpio.BiasPullUp || lc.Edge != gpio.DetectBoth || lc.Clock != gpio.ClockRealtime || !lc.ActiveLow {
		t.Errorf("line config %+v", lc)
	}
	if d := Default().GPIO; d.Enabled || len(d.Chips) != 0 {
		t.Errorf("gpio is on by default: %+v", d)
	}
}

func TestGPIOConfigCheckNamesKeyAndReason(t *testing.T) {
	_, err := Parse("x.yaml", []byte(`gpio:
  enabled: true
  phc: /dev/rtc0
  chips:
    - chip: gpiochip0
      buffer: 2048
      ring: 1000
      lines:
        - {offset: 17, edge: up}
        - {offset: 17, bias: sideways, clock: tai, debounce: 1500ns}
    - chip: gpiochip0
      replay: /tmp/x
      lines:
        - {offset: 1, clock: hte}
        - {offset: 2}
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
		"gpio.phc":                        "not a PHC device",
		"gpio.chips[0].buffer":            "1 to 1024",
		"gpio.chips[0].ring":              "not a power of two",
		"gpio.chips[0].lines[0].edge":     `"up": want both, falling, rising`,
		"gpio.chips[0].lines[1].offset":   "offset 17 is also gpio.chips[0].lines[0]",
		"gpio.chips[0].lines[1].bias":     `"sideways"`,
		"gpio.chips[0].lines[1].clock":    `"tai": want hte, monotonic, realtime`,
		"gpio.chips[0].lines[1].debounce": "whole microseconds",
		"gpio.chips[1].chip":              "also gpio.chips[0]",
		"gpio.chips[1].lines[0].clock":    "engine's own timebase",
		"gpio.chips[1].lines[1].clock":    "a replay has one clock",
	}
	for k, reason := range want {
		if !strings.Contains(got[k], reason) {
			t.Errorf("%s: %q, want it to say %q", k, got[k], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems at %d keys, want %d: %v", len(got), len(want), got)
	}
}

func TestGPIOConfigBoard(t *testing.T) {
	dir := t.TempDir()
	replay := filepath.Join(dir, "capture")
	if err := os.WriteFile(replay, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g := GPIOConfig{Enabled: true, PHC: filepath.Join(dir, "ptp7"), Chips: []GPIOChipConfig{
		{Chip: "gpiochip42", Lines: []GPIOLineConfig{gpioLineCfg(1, "", "monotonic")}},
		{Chip: "fixture", Replay: replay, Lines: []GPIOLineConfig{gpioLineCfg(1, "", "monotonic")}},
	}}
	var p problems
	g.board(PathsConfig{Dev: dir}, &p)
	var keys []string
	for _, ke := range p.Problems {
		keys = append(keys, ke.Key)
	}
	if want := []string{"gpio.chips[0].chip", "gpio.phc"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("board problems at %v, want %v", keys, want)
	}
}

func gpioLineCfg(offset int, name, clock string) GPIOLineConfig {
	l := entryDefaults[GPIOLineConfig]()
	l.Offset, l.Name, l.Clock = offset, name, clock
	return l
}

// entryDefaults is a list entry as an empty mapping decodes: its defaults.
func entryDefaults[T any]() T {
	var v T
	if err := yaml.Unmarshal([]byte("{}"), &v); err != nil {
		panic(err)
	}
	return v
}

func TestGPIOTriggerConfigDefaultsAndDecode(t *testing.T) {
	c, err := Parse("x.yaml", []byte(`gpio:
  enabled: true
  chips:
    - chip: gpiochip0
      lines:
        - {offset: 17, edge: rising}
        - {offset: 18}
  triggers:
    - {name: power, chip: gpiochip0, line: 17, sensors: ["hwmon/ina226/*"]}
    - {name: adc, chip: gpiochip0, line: 18, edge: falling, sensors: ["iio/*/voltage0", "thermal/*/*"], min_interval: 0s}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPIOTriggerConfig{
		{Name: "power", Chip: "gpiochip0", Line: 17, Edge: "both", Sensors: []string{"hwmon/ina226/*"}, MinInterval: 100 * time.Millisecond},
		{Name: "adc", Chip: "gpiochip0", Line: 18, Edge: "falling", Sensors: []string{"iio/*/voltage0", "thermal/*/*"}},
	}
	if !reflect.DeepEqual(c.GPIO.Triggers, want) {
		t.Errorf("triggers %+v, want %+v", c.GPIO.Triggers, want)
	}
}

func TestGPIOTriggerConfigCheckNamesKeyAndReason(t *testing.T) {
	_, err := Parse("x.yaml", []byte(`gpio:
  enabled: true
  chips:
    - chip: gpiochip0
      lines:
        - {offset: 17, edge: rising}
  triggers:
    - {name: ok, chip: gpiochip0, line: 17, edge: rising, sensors: ["hwmon/*/*"]}
    - {name: ok, chip: gpiochip1, line: 17, edge: up, sensors: ["hwmon/[/*", "ina226/*"], min_interval: -1s}
    - {name: "a-b", chip: gpiochip0, line: 4, sensors: []}
    - {name: c, chip: gpiochip0, line: 17, edge: falling, sensors: ["gpu/x/y", "*/x/y"]}
    - {name: d, line: 17, sensors: ["iio/*/*"]}
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
		"gpio.triggers[1].name":         `"ok" is also gpio.triggers[0]`,
		"gpio.triggers[1].chip":         "gpiochip1 is not in gpio.chips",
		"gpio.triggers[1].edge":         `"up": want both, falling, rising`,
		"gpio.triggers[1].sensors[0]":   "syntax error in pattern",
		"gpio.triggers[1].sensors[1]":   "want source/device/name",
		"gpio.triggers[1].min_interval": "negative",
		"gpio.triggers[2].name":         `"a-b": want letters, digits and _`,
		"gpio.triggers[2].line":         "4 is not a line of gpiochip0",
		"gpio.triggers[2].sensors":      "at least one",
		"gpio.triggers[3].edge":         "line 17 of gpiochip0 detects rising edges only",
		"gpio.triggers[3].sensors[0]":   `source "gpu": want hwmon, thermal or iio`,
		"gpio.triggers[4].chip":         "must be set",
	}
	for k, reason := range want {
		if !strings.Contains(got[k], reason) {
			t.Errorf("%s: %q, want it to say %q", k, got[k], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems at %d keys, want %d: %v", len(got), len(want), got)
	}
}
