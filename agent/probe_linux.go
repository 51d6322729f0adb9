package agent

import (
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// readPHC opens a PHC, reads its caps and pins and takes one reading.
func readPHC(path string) PHCProbe {
	var p PHCProbe
	d, err := phc.Open(path)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer d.Close()
	caps := d.Caps()
	p.Caps = &caps
	if pins, err := d.Pins(); err == nil {
		p.PinFuncs = pins
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
