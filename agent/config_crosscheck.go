package agent

import "fmt"

// adviseCrossCheck warns when the system clock will have a single judged
// reference: its vote (package vote, agent/judging) then cannot cross-check
// it, and a reference that lies is believed. A warning, not an error: one
// reference is a valid configuration. The clocks ptp4l disciplines and an
// HCA rank's clock have one reference by design and are not warned of.
func (c *Config) adviseCrossCheck(p *problems) {
	var keys []string // one per judged reference of the system clock
	open := ""        // a section whose references are found at run time
	add := func(on bool, key string, n int) {
		for range n {
			if on {
				keys = append(keys, key)
			}
		}
	}
	if n := &c.NTP; n.Enabled {
		for i := range n.Servers {
			add(n.Judge.Enabled, fmt.Sprintf("ntp.servers[%d]", i), 1)
		}
		ks, all := n.Chrony.All()
		for i, x := range all {
			add(x.Head().Enabled && x.Judge.Enabled, ks[i], 1)
		}
		ks, all2 := n.Ntpd.All()
		for i, x := range all2 {
			add(x.Head().Enabled && x.Judge.Enabled, ks[i], 1)
		}
	}
	if x := &c.PTP; x.Enabled {
		add(x.Probe.Enabled && x.Probe.Judge.Enabled, "ptp.probe", 1)
	}
	if x := &c.PHC; x.Enabled && x.Judge.Enabled {
		if k := len(x.Devices) + len(x.Interfaces); k > 0 {
			add(true, "phc.judge", k)
		} else {
			add(true, "phc.judge", 1)
			open = "phc (every PHC found is a reference)"
		}
	}
	if x := &c.PPS; x.Enabled {
		add(x.Judge.Enabled, "pps.judge", len(x.Devices))
	}
	if x := &c.GNSS; x.Enabled && x.Judge.Enabled {
		add(true, "gnss.judge", 1)
		open = "gnss (each receiver gpsd serves is a reference)"
	}
	if len(keys) != 1 {
		return
	}
	why := "the system clock has one judged reference: not cross-checked, so a reference that lies (a server serving the wrong time, a PPS on the wrong second) is believed; judge two more of ntp.servers, ntp.chrony, ptp.probe, phc, pps, gnss for a majority to vote it out"
	if open != "" {
		why = "unless " + open + " finds more, " + why
	}
	p.Add(keys[0], "%s", why)
}
