package inventory

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/monagent/monagent/gpio"
)

// GPIOChipProbe is a GPIO chip with its lines, as the character device
// reports them (gpioinfo's view).
type GPIOChipProbe struct {
	Path  string          `json:"path"`
	Name  string          `json:"name,omitempty"`
	Label string          `json:"label,omitempty"`
	Lines int             `json:"num_lines"`
	Line  []GPIOLineProbe `json:"lines"`
	Error string          `json:"error,omitempty"`
}

// GPIOLineProbe is one line: a line in use names its consumer (a driver,
// "sysfs", or the process that requested it).
type GPIOLineProbe struct {
	Offset   int      `json:"offset"`
	Name     string   `json:"name,omitempty"`
	Used     bool     `json:"used"`
	Consumer string   `json:"consumer,omitempty"`
	Flags    []string `json:"flags"`
}

// PPSProbe is a PPS device with its caps: which edges it can capture, and
// the mode in force (which it does capture now).
type PPSProbe struct {
	DeviceProbe
	AssertCapture bool     `json:"assert_capture"`
	ClearCapture  bool     `json:"clear_capture"`
	Caps          []string `json:"caps"`
	Mode          []string `json:"mode"`
	Error         string   `json:"error,omitempty"`
}

// Why the GPIO chip and PPS lists are empty.
const (
	absentGPIO = "no /dev/gpiochip*"
	absentPPS  = "no /dev/pps*"
)

// probeGPIO lists the GPIO chips under dev, each read by read when it is set.
func probeGPIO(dev string, read func(path string) GPIOChipProbe) (paths []string, chips []GPIOChipProbe) {
	paths = glob(filepath.Join(dev, "gpiochip*"))
	chips = []GPIOChipProbe{}
	for _, d := range paths {
		cp := GPIOChipProbe{Path: d}
		if read != nil {
			cp = read(d)
			cp.Path = d
		}
		cp.Line = list(cp.Line)
		for i := range cp.Line {
			cp.Line[i].Flags = list(cp.Line[i].Flags)
		}
		chips = append(chips, cp)
	}
	return paths, chips
}

// probePPS lists the PPS devices under dev with their names from sysfs, each
// read by read when it is set.
func probePPS(p Paths, read func(path string) PPSProbe) []PPSProbe {
	out := []PPSProbe{}
	for _, d := range glob(filepath.Join(p.Dev, "pps*")) {
		var pp PPSProbe
		if read != nil {
			pp = read(d)
		}
		pp.Caps, pp.Mode = list(pp.Caps), list(pp.Mode)
		pp.DeviceProbe = DeviceProbe{Path: d, Name: readTrim(filepath.Join(p.Sys, "class", "pps", filepath.Base(d), "name"))}
		out = append(out, pp)
	}
	return out
}

// ppsProbe lists a PPS device's caps and mode.
func ppsProbe(in gpio.PPSInfo) PPSProbe {
	return PPSProbe{AssertCapture: in.Caps&gpio.PPSCaptureAssert != 0, ClearCapture: in.Caps&gpio.PPSCaptureClear != 0,
		Caps: in.Caps.Names(), Mode: in.Mode.Names()}
}

func (inv *Inventory) writeGPIO(pf func(string, ...any)) {
	pf("\nGPIO chips:\n")
	if len(inv.GPIOChips) == 0 {
		pf("  absent: %s\n", inv.Absent.GPIOChips)
	}
	for i, g := range inv.GPIOChips {
		if i >= len(inv.GPIO) {
			pf("  %s\n", g)
			continue
		}
		inv.GPIO[i].writeText(pf)
	}
}

func (c *GPIOChipProbe) writeText(pf func(string, ...any)) {
	if c.Error != "" && c.Name == "" {
		pf("  %s  error: %s\n", c.Path, c.Error)
		return
	}
	pf("  %s  %s %q, %d lines\n", c.Path, c.Name, c.Label, c.Lines)
	if c.Error != "" {
		defer pf("    error: %s\n", c.Error)
	}
	for _, l := range c.Line {
		name := l.Name
		if name == "" {
			name = "unnamed"
		}
		state := "unused"
		switch {
		case l.Used && l.Consumer == "":
			state = "used (no consumer name)"
		case l.Used:
			state = fmt.Sprintf("used by %q", l.Consumer)
		}
		pf("    line %3d  %-12s %-24s %s\n", l.Offset, name, state, strings.Join(l.Flags, " "))
	}
}

func (inv *Inventory) writePPS(pf func(string, ...any)) {
	pf("\nPPS sources:\n")
	if len(inv.PPS) == 0 {
		pf("  absent: %s\n", inv.Absent.PPS)
	}
	for _, d := range inv.PPS {
		pf("  %s %s", d.Path, orNone(d.Name))
		switch {
		case d.Error != "":
			pf(": %s\n", d.Error)
		case len(d.Caps) == 0: // not read
			pf("\n")
		default:
			pf(": assert capture %s, clear capture %s\n    caps %s; mode %s\n", canDo(d.AssertCapture, d.Mode, "capture_assert"),
				canDo(d.ClearCapture, d.Mode, "capture_clear"), strings.Join(d.Caps, " "), orNone(strings.Join(d.Mode, " ")))
		}
	}
}

// canDo says whether a PPS device can capture an edge, and whether its mode
// captures it now.
func canDo(can bool, mode []string, bit string) string {
	switch {
	case !can:
		return "no"
	case slices.Contains(mode, bit):
		return "yes"
	}
	return "possible, not enabled (PPS_SETPARAMS)"
}
