package inventory

import (
	"strings"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// readPHC opens a PHC, reads its caps and pins and takes one reading.
func readPHC(path string) PHCProbe {
	d, err := phc.Open(path)
	if err != nil {
		return PHCProbe{Error: err.Error()}
	}
	defer d.Close()
	caps := d.Caps()
	p := PHCProbe{Caps: &caps}
	if pins, err := d.Pins(); err == nil {
		p.PinFuncs = pins
	} else {
		p.PinFuncs, p.PinsError = pins, err.Error()
	}
	if c, err := d.Clock(); err == nil {
		p.ClockGetRes, _ = c.Resolution()
	}
	s := d.NewSampler(9, phc.MethodAuto)
	var r phc.Reading
	if err := s.Sample(timebase.DomainRealtime, &r); err != nil {
		p.Error = err.Error()
	} else {
		p.Method, p.OffsetNS, p.DelayNS = r.Method.String(), r.OffsetNS, r.DelayNS
		p.PHCNS, p.RealtimeNS = r.PHCNS, r.SysNS
	}
	p.Refusals = s.Refusals()
	return p
}

// readGPIOChip opens a GPIO chip and reads the information of every line.
func readGPIOChip(path string) GPIOChipProbe {
	cp := GPIOChipProbe{Path: path}
	c, err := gpio.Open(path)
	if err != nil {
		cp.Error = err.Error()
		return cp
	}
	defer c.Close()
	ci := c.Info()
	cp.Name, cp.Label, cp.Lines = ci.Name, ci.Label, ci.Lines
	for i := 0; i < ci.Lines; i++ {
		li, err := c.LineInfo(i)
		if err != nil {
			cp.Error = err.Error()
			break
		}
		cp.Line = append(cp.Line, GPIOLineProbe{Offset: li.Offset, Name: li.Name, Used: li.Used(), Consumer: li.Consumer, Flags: lineFlags(li.Flags)})
	}
	return cp
}

// lineFlags names a line's flags but "used", which the probe shows apart.
func lineFlags(f gpio.LineFlags) []string {
	s := (f &^ gpio.FlagUsed).String()
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "|")
}

// readPPS opens a PPS device, needing no particular edge, and reads its caps
// and mode.
func readPPS(path string) PPSProbe {
	var pp PPSProbe
	d, err := gpio.OpenPPS(path, gpio.PPSConfig{})
	if err != nil {
		pp.Error = err.Error()
		return pp
	}
	defer d.Close()
	return ppsProbe(d.Info())
}
