package phc

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// TestGuestNICClock runs in the kernel-in-the-loop rig's guests
// (internal/testbed/guest), whose e1000e NIC's driver registers a PHC: found
// through sysfs and through the ethtool timestamping ioctl on the interface,
// its capabilities read, every read method tried against every system clock
// with the kernel's refusals handled, and — QEMU does not advance the
// e1000e's clock — the stopped clock reported as such.
func TestGuestNICClock(t *testing.T) {
	iface := os.Getenv("MONAGENT_GUEST_PHC_IFACE")
	if iface == "" {
		t.Skip("no NIC with a PHC the test knows of (the rig's guests set MONAGENT_GUEST_PHC_IFACE)")
	}
	ts, err := sockts.InterfaceTimestamping(iface)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: PHC %d, capabilities %v, tx types %#x, rx filters %#x", iface, ts.PHCIndex, ts.Capabilities(), ts.TxTypes, ts.RxFilters)
	if !ts.Hardware().RX {
		t.Errorf("%s: no hardware timestamping (%v); the e1000e has it", iface, ts.Capabilities())
	}
	infos, err := Discover(DefaultPaths)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(infos, func(in Info) bool { return in.Index == ts.PHCIndex })
	if i < 0 {
		t.Fatalf("ethtool names PHC %d, sysfs lists %+v", ts.PHCIndex, infos)
	}
	info := infos[i]
	// The e1000e names its clock by the NIC's permanent MAC address.
	if info.Name == "" || !slices.Contains(info.Interfaces, iface) {
		t.Errorf("sysfs: %+v; want a named clock owned by %s", info, iface)
	}
	d, err := Open(info.Device)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if c := d.Caps(); c.MaxAdjPPB <= 0 || c.ExtTS != info.ExtTS || c.Pins != info.Pins {
		t.Errorf("caps %+v do not agree with sysfs %+v", c, info)
	}
	if pins, err := d.Pins(); err != nil || len(pins) != info.Pins {
		t.Errorf("pins %v, %v; sysfs says %d", pins, err, info.Pins)
	}

	// Every method against every system clock: a reading, or a refusal the
	// sampler records and falls back from. The e1000e has no cross-
	// timestamps; a 6.1 kernel reads PTP_SYS_OFFSET_EXTENDED against
	// REALTIME only, so MONOTONIC and MONOTONIC_RAW readings are moved there
	// with a bracketed clock read.
	for _, m := range []Method{MethodPrecise, MethodExtended, MethodBasic} {
		s := d.NewSampler(9, m)
		for _, sys := range []timebase.Domain{timebase.DomainRealtime, timebase.DomainMonotonic, timebase.DomainMonotonicRaw} {
			var r Reading
			if err := s.Sample(sys, &r); err != nil {
				t.Errorf("prefer %s against %s: %v", m, sys, err)
				continue
			}
			if r.Method == MethodPrecise || r.SysDomain != sys || r.DelayNS <= 0 || r.Samples < 1 {
				t.Errorf("prefer %s against %s: %+v", m, sys, r)
			}
			if sys != timebase.DomainRealtime && (r.BracketNS <= 0 || r.BracketNS > r.DelayNS) {
				t.Errorf("prefer %s against %s: bracket %d ns of delay %d ns; want a bracketed move from realtime", m, sys, r.BracketNS, r.DelayNS)
			}
			t.Logf("prefer %s against %s: method %s, delay %d ns, bracket %d ns", m, sys, r.Method, r.DelayNS, r.BracketNS)
		}
		refusals := strings.Join(s.Refusals(), "\n")
		if m == MethodPrecise && !strings.Contains(refusals, "precise against realtime: no cross-timestamping") {
			t.Errorf("prefer precise: refusals %q; want precise refused", refusals)
		}
		if m != MethodBasic && s.Fallbacks() == 0 {
			t.Errorf("prefer %s: no fallbacks counted", m)
		}
	}

	// QEMU 7.2 never advances the e1000e's clock: two readings 200 ms apart
	// must say so.
	s := d.NewSampler(9, MethodAuto)
	var a, b Reading
	if err := s.Sample(timebase.DomainRealtime, &a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := s.Sample(timebase.DomainRealtime, &b); err != nil {
		t.Fatal(err)
	}
	err = CheckAdvancing(a, b)
	if !errors.Is(err, ErrNotAdvancing) {
		t.Fatalf("PHC at %d then %d over %d ns of realtime: %v; QEMU's e1000e clock does not advance", a.PHCNS, b.PHCNS, b.SysNS-a.SysNS, err)
	}
	t.Logf("%s: %v", info.Device, err)
}
