package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/monagent/monagent/sensors/sensorstest"
)

// TestRunSensorsFromFixtureSysfs: with paths.sys on the fixture board,
// `run` ships a sensor record per readable sensor with its unit, and names
// the unreadable thermal zone in its log without losing the others.
func TestRunSensorsFromFixtureSysfs(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`paths:
  sys: %s
  dev: %s
clock:
  enabled: false
phc:
  enabled: false
sensors:
  include: ["hwmon/ina226/*", "thermal/*/*", "iio/bmp280/*"]
output:
  stdout: true
spool:
  enabled: false
`, sys, dev))
	stdout, stderr, code := run(t, dir, "run", "--config", cfg, "--duration", "1500ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		`sensor,device=ina226,host=`, `kind=voltage,label=vbus,sensor=in1,source=hwmon,unit=nV value=5012000000i`,
		`sensor=power1,source=hwmon,unit=uW value=2065000i`,
		`sensor,device=thermal_zone0,host=`, `sensor=cpu_thermal,source=thermal,unit=u°C value=47500000i`,
		`sensor,device=bmp280,host=`, `sensor=temp,source=iio,unit=u°C value=23450000i`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(stdout, "gpu_thermal") || !strings.Contains(stderr, "thermal_zone1/temp") {
		t.Errorf("the unreadable zone: shipped or not named")
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}
