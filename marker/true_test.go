package marker

import (
	"errors"
	"strings"
	"testing"
)

// A true stamp (the time API's interval as the sender read it) travels in
// the line as <utc|global>=<ns> <…>_bound=<ns>, both or neither, one per
// marker.
func TestTrueStamp(t *testing.T) {
	m := Marker{Name: "step", Clock: ClockMonotonic, StampNS: 42, True: TrueGlobal, TrueNS: 1234, TrueBoundNS: 56}
	m.AddTag("rank", "1")
	line := m.String()
	if line != "step mono=42 global=1234 global_bound=56 rank=1" {
		t.Fatalf("line %q", line)
	}
	back, err := Parse([]byte(line))
	if err != nil || back != m {
		t.Fatalf("Parse(%q) = %+v, %v, want %+v", line, back, err, m)
	}
	if u, err := Parse([]byte("x utc_bound=7 utc=1700000000000000000")); err != nil || u.True != TrueSystem || u.TrueNS != 1700000000000000000 || u.TrueBoundNS != 7 {
		t.Errorf("utc stamp: %+v %v", u, err)
	}
	for _, bad := range []string{
		"x utc=1",                      // no bound
		"x global_bound=1",             // no midpoint
		"x utc=1 utc_bound=1 global=2", // two sections
		"x utc=1 utc=2 utc_bound=1",    // twice
		"x global=-1 global_bound=1",   // negative
		"x utc=1 utc_bound=1 utc_ns=3", // a record field as a tag
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q): %v, want a syntax error", bad, err)
		}
	}
	if err := (&Marker{Name: "x", TrueNS: 1}).Validate(); err == nil || !strings.Contains(err.Error(), "without a section") {
		t.Errorf("a true stamp without a section: %v", err)
	}
}
