package timebase

import "testing"

func TestDomainNamesRoundTrip(t *testing.T) {
	for _, d := range []Domain{DomainRealtime, DomainTAI, DomainMonotonic, DomainMonotonicRaw, DomainBoottime, DomainGlobal, PHC(0), PHC(3), PHC(255)} {
		got, err := ParseDomain(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDomain(%q) = %v, %v; want %v", d.String(), got, err, d)
		}
	}
	for _, bad := range []string{"", "unknown", "phc", "phc-1", "phcx", "REALTIME"} {
		if _, err := ParseDomain(bad); err == nil {
			t.Errorf("ParseDomain(%q) accepted", bad)
		}
	}
	if n, ok := PHC(7).PHCIndex(); !ok || n != 7 {
		t.Errorf("PHC(7).PHCIndex() = %d, %v", n, ok)
	}
	if _, ok := DomainTAI.PHCIndex(); ok {
		t.Error("TAI claims to be a PHC")
	}
}

func TestFdToClockID(t *testing.T) {
	// FD_TO_CLOCKID(3) in the kernel's uapi is ((~3) << 3) | 3 = -29.
	if got := fdToClockID(3); got != -29 {
		t.Fatalf("fdToClockID(3) = %d, want -29", got)
	}
}
