package inventory

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/phc"
)

// The probe with fakes: PHC pins listed with their functions, or absent with
// the reason; a PPS device that can capture clear edges but does not, one
// that fails to open; a chip whose line info fails part way.
func TestProbeGPIOPPSAndPinsWithFakes(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"dev", "sys/class/ptp/ptp0", "sys/class/ptp/ptp1", "sys/class/pps/pps0"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"dev/gpiochip0", "dev/pps0", "dev/pps1", "dev/ptp0", "dev/ptp1"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{}
	for _, n := range []string{"ptp0", "ptp1"} {
		for _, f := range []string{"max_adjustment", "n_external_timestamps", "n_periodic_outputs", "pps_available"} {
			files["sys/class/ptp/"+n+"/"+f] = "0"
		}
	}
	for f, v := range map[string]string{
		"sys/class/ptp/ptp0/clock_name": "e1000e", "sys/class/ptp/ptp0/n_programmable_pins": "2",
		"sys/class/ptp/ptp1/clock_name": "CTPS timer", "sys/class/ptp/ptp1/n_programmable_pins": "2",
		"sys/class/pps/pps0/name": "pps@4",
	} {
		files[f] = v
	}
	for f, v := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := fixtureProbeEnv(root)
	env.ReadPHC = func(path string) PHCProbe {
		if strings.HasSuffix(path, "ptp1") {
			return PHCProbe{Caps: &phc.Caps{Pins: 2}, PinsError: "phc " + path + ": PTP_PIN_GETFUNC 0: operation not supported"}
		}
		return PHCProbe{Caps: &phc.Caps{ExtTS: 2, Pins: 2}, PinFuncs: []phc.Pin{
			{Name: "SDP0", Index: 0, Func: phc.PinExtTS, Channel: 1}, {Name: "SDP1", Index: 1, Func: phc.PinNone}}}
	}
	env.GPIOChip = func(path string) GPIOChipProbe {
		return GPIOChipProbe{Name: "gpiochip0", Label: "gpio-sim.0-node0", Lines: 8,
			Line:  []GPIOLineProbe{{Offset: 0, Name: "trigger", Used: true, Consumer: "monagent", Flags: []string{"input", "edge_both"}}},
			Error: "gpio " + path + " line 1: GPIO_V2_GET_LINEINFO_IOCTL: input/output error"}
	}
	env.PPS = func(path string) PPSProbe {
		if strings.HasSuffix(path, "pps1") {
			return PPSProbe{Error: "pps " + path + ": PPS_GETCAP: not a PPS device: inappropriate ioctl for device"}
		}
		return ppsProbe(gpio.PPSInfo{Caps: gpio.PPSCaptureAssert | gpio.PPSCaptureClear | gpio.PPSCanWait, Mode: gpio.PPSCaptureAssert})
	}
	inv := Probe(context.Background(), env)
	var text bytes.Buffer
	inv.WriteText(&text)
	for _, want := range []string{
		`pin 0 "SDP0": extts channel 1`,
		`pin 1 "SDP1": none channel 0`,
		"pins: absent: phc " + root + "/dev/ptp1: PTP_PIN_GETFUNC 0: operation not supported",
		`used by "monagent"`,
		"gpio " + root + "/dev/gpiochip0 line 1: GPIO_V2_GET_LINEINFO_IOCTL",
		"dev/pps0 pps@4: assert capture yes, clear capture possible, not enabled (PPS_SETPARAMS)",
		"caps capture_assert capture_clear can_wait; mode capture_assert",
		"dev/pps1 none: pps " + root + "/dev/pps1: PPS_GETCAP: not a PPS device",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("probe text lacks %q:\n%s", want, text.String())
		}
	}
	if len(inv.PPS) != 2 || !inv.PPS[0].ClearCapture || inv.PPS[1].AssertCapture || inv.PPS[0].Name != "pps@4" {
		t.Errorf("pps inventory %+v", inv.PPS)
	}
	if len(inv.GPIO) != 1 || inv.GPIO[0].Path != root+"/dev/gpiochip0" || len(inv.GPIO[0].Line) != 1 {
		t.Errorf("gpio inventory %+v", inv.GPIO)
	}
}

// The real readers on nodes that are not devices (the fixture's empty files):
// an error naming the node, never a panic or an empty entry.
func TestProbeReadersOnNonDevices(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"gpiochip0", "pps0"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chip := readGPIOChip(filepath.Join(dir, "gpiochip0"))
	pps := readPPS(filepath.Join(dir, "pps0"))
	missing := readPPS(filepath.Join(dir, "pps9"))
	for _, c := range []struct{ what, err, path string }{
		{"chip", chip.Error, "gpiochip0"}, {"pps", pps.Error, "pps0"}, {"missing pps", missing.Error, "pps9"},
	} {
		if c.err == "" {
			t.Errorf("%s: no error", c.what)
			continue
		}
		if runtime.GOOS == "linux" && !strings.Contains(c.err, c.path) {
			t.Errorf("%s: error %q does not name %s", c.what, c.err, c.path)
		}
	}
	if chip.Lines != 0 || len(chip.Line) != 0 || pps.AssertCapture || len(pps.Caps) != 0 {
		t.Errorf("non-devices probed as %+v, %+v", chip, pps)
	}
}
