package phc

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// ErrNoPHC is a network interface without a PTP hardware clock.
var ErrNoPHC = errors.New("no PTP hardware clock")

// InterfaceError is an interface of a list whose PHC could not be found:
// Index is its place in the list, Err why (ErrNoPHC, or the lookup's error).
type InterfaceError struct {
	Index     int
	Interface string
	Err       error
}

func (e *InterfaceError) Error() string {
	if errors.Is(e.Err, ErrNoPHC) {
		return "interface " + e.Interface + " has no PTP hardware clock"
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *InterfaceError) Unwrap() error { return e.Err }

// Select lists the PHCs to measure, each once, with what discovery (under
// p) knows of each: devices as given, then the PHC of each of interfaces
// (/dev/ptpN under p.Dev, asked of ifacePHC), or every PHC discover finds
// when both lists are empty. A PHC discovery does not know is its Device
// alone; discovery failing is an error only when it is what selects.
// discover and ifacePHC are Discover and InterfacePHC but in tests.
func Select(p Paths, devices, interfaces []string, discover func(Paths) ([]Info, error), ifacePHC func(string) (int, error)) ([]Info, error) {
	paths := slices.Clone(devices)
	for i, iface := range interfaces {
		idx, err := ifacePHC(iface)
		if err == nil && idx < 0 {
			err = ErrNoPHC
		}
		if err != nil {
			return nil, &InterfaceError{Index: i, Interface: iface, Err: err}
		}
		paths = append(paths, fmt.Sprintf("%s/ptp%d", p.Dev, idx))
	}
	infos, err := discover(p)
	if len(paths) == 0 {
		if err != nil {
			return nil, err
		}
		return infos, nil
	}
	var out []Info
	for _, d := range paths {
		if slices.ContainsFunc(out, func(in Info) bool { return in.Device == d }) {
			continue
		}
		i := slices.IndexFunc(infos, func(in Info) bool { return in.Device == d })
		if i < 0 {
			out = append(out, Info{Device: d})
		} else {
			out = append(out, infos[i])
		}
	}
	return out, nil
}

// MaySelect says whether Select, given devices and interfaces, may list the
// PHC dev: it does when dev is among devices (as cleaned paths), and may
// when interfaces are listed (one may own dev) or both lists are empty
// (every PHC found).
func MaySelect(devices, interfaces []string, dev string) bool {
	return len(interfaces) > 0 || len(devices) == 0 ||
		slices.ContainsFunc(devices, func(d string) bool { return filepath.Clean(d) == filepath.Clean(dev) })
}

// Shared is an interface of a list whose PHC an earlier entry names already
// (SharedPHCs).
type Shared struct {
	Interface int    // its index in the interfaces
	Device    string // its PHC's device, as discovery names it
	// The first entry naming the PHC: devices[By] when ByDevice, else
	// interfaces[By].
	By       int
	ByDevice bool
}

// SharedPHCs finds each of interfaces whose PHC (as infos, from Discover,
// show it) one of devices or an earlier interface names already: the ports
// of one NIC, or CPSW's two on a BeagleBone, share one PHC, which is measured
// once. Interfaces infos do not know, and a name listed twice, are not
// reported; devices compare as cleaned paths.
func SharedPHCs(infos []Info, devices, interfaces []string) []Shared {
	owner := map[string]string{} // interface -> its PHC's device
	for _, in := range infos {
		for _, name := range in.Interfaces {
			owner[name] = filepath.Clean(in.Device)
		}
	}
	type namer struct {
		by       int
		byDevice bool
		iface    string
	}
	named := map[string]namer{} // device -> the first entry naming it
	for i, d := range devices {
		if _, dup := named[filepath.Clean(d)]; d != "" && !dup {
			named[filepath.Clean(d)] = namer{by: i, byDevice: true}
		}
	}
	var out []Shared
	for i, name := range interfaces {
		dev, ok := owner[name]
		if !ok {
			continue
		}
		first, dup := named[dev]
		switch {
		case !dup:
			named[dev] = namer{by: i, iface: name}
		case first.iface != name:
			out = append(out, Shared{Interface: i, Device: dev, By: first.by, ByDevice: first.byDevice})
		}
	}
	return out
}
