package phc

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

func TestVanishedDeviceIsAnErrorNotAFallback(t *testing.T) {
	f := newFake()
	f.refuse["extended"] = classify("PTP_SYS_OFFSET_EXTENDED", unix.ENODEV)
	s := newSampler(f, Caps{}, 9, MethodAuto, f.readSys)
	var r Reading
	err := s.Sample(timebase.DomainRealtime, &r)
	if !errors.Is(err, unix.ENODEV) || errors.Is(err, ErrMethodUnsupported) {
		t.Fatalf("ENODEV gave %v; want the errno, not a method refusal", err)
	}
	if f.calls["basic"] != 0 {
		t.Fatal("a vanished device was retried with another method")
	}
}

func TestEveryMethodRefused(t *testing.T) {
	f := newFake()
	f.refuse["extended"] = classify("PTP_SYS_OFFSET_EXTENDED", unix.EOPNOTSUPP)
	f.refuse["basic"] = classify("PTP_SYS_OFFSET", unix.ENOTTY)
	s := newSampler(f, Caps{}, 9, MethodAuto, f.readSys)
	var r Reading
	if err := s.Sample(timebase.DomainRealtime, &r); !errors.Is(err, ErrMethodUnsupported) {
		t.Fatalf("got %v, want ErrMethodUnsupported", err)
	}
	if got := len(s.Refusals()); got != 2 {
		t.Fatalf("refusals %q", s.Refusals())
	}
	if err := s.Sample(timebase.DomainTAI, &r); err == nil {
		t.Fatal("sampling against TAI accepted")
	}
}

func TestPins(t *testing.T) {
	f := newFake()
	f.capsv.N_pins = 2
	d, err := newDevice("/dev/ptp3", 3, f)
	if err != nil {
		t.Fatal(err)
	}
	pins, err := d.Pins()
	if err != nil || len(pins) != 2 || pins[1] != (Pin{Name: "SDP1", Index: 1, Func: PinExtTS, Channel: 1}) {
		t.Fatalf("pins %+v, %v", pins, err)
	}
	if d.Domain() != timebase.PHC(3) {
		t.Fatalf("domain %v", d.Domain())
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	f := newFake()
	s := newSampler(f, Caps{}, 9, MethodAuto, f.readSys)
	var r Reading
	s.Sample(timebase.DomainMonotonicRaw, &r) // first call may record state
	if a := testing.AllocsPerRun(200, func() {
		if err := s.Sample(timebase.DomainMonotonicRaw, &r); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("Sample allocates %v times", a)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("/dev/not-a-ptp"); err == nil {
		t.Fatal("a non-ptp path was opened")
	}
	_, err := Open("/dev/ptp99")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing device: %v", err)
	}
}

// TestRealPHC runs against every PHC this machine has; the QEMU rig provides one
// (e1000e) where the host has none.
func TestRealPHC(t *testing.T) {
	infos, err := Discover(DefaultPaths)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) == 0 {
		t.Skip("no PTP hardware clock on this machine (/sys/class/ptp is empty)")
	}
	for _, info := range infos {
		d, err := Open(info.Device)
		if err != nil {
			t.Fatal(err)
		}
		s := d.NewSampler(9, MethodAuto)
		for _, sys := range []timebase.Domain{timebase.DomainRealtime, timebase.DomainMonotonicRaw} {
			var r Reading
			if err := s.Sample(sys, &r); err != nil {
				t.Fatalf("%s against %s: %v", info.Device, sys, err)
			}
			t.Logf("%s (%s) vs %s: offset %d ns delay %d ns method %s refusals %q", info.Device, info.Name, sys, r.OffsetNS, r.DelayNS, r.Method, s.Refusals())
		}
		d.Close()
	}
}
