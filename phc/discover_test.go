package phc

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestDiscoverFixture(t *testing.T) {
	got, err := Discover(Paths{Sys: "testdata/sys", Dev: "/dev"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(got, "", "  ")
	want, err := os.ReadFile("testdata/discover.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(b), bytes.TrimSpace(want)) {
		t.Fatalf("discover output differs from golden:\n%s", b)
	}
}

func TestDiscoverAbsentIsEmpty(t *testing.T) {
	got, err := Discover(Paths{Sys: t.TempDir(), Dev: "/dev"})
	if err != nil || len(got) != 0 {
		t.Fatalf("no /sys/class/ptp: %v, %v; want empty and no error", got, err)
	}
}

func TestDiscoverBadSysfsNamesFile(t *testing.T) {
	_, err := Discover(Paths{Sys: "testdata/bad", Dev: "/dev"})
	if err == nil || !strings.Contains(err.Error(), "max_adjustment") || !strings.Contains(err.Error(), `"lots"`) {
		t.Fatalf("bad sysfs value: error %v, want one naming the file and the value", err)
	}
}

func TestTimestampingCapabilities(t *testing.T) {
	ts := Timestamping{PHCIndex: 0, SOFlags: 1<<0 | 1<<2 | 1<<6}
	if got := strings.Join(ts.Capabilities(), ","); got != "tx_hardware,rx_hardware,raw_hardware" || !ts.Hardware() {
		t.Fatalf("capabilities %q hardware %v", got, ts.Hardware())
	}
	if (Timestamping{PHCIndex: -1, SOFlags: 1<<1 | 1<<3 | 1<<4}).Hardware() {
		t.Fatal("software-only interface claims hardware timestamping")
	}
}

func TestParseMethod(t *testing.T) {
	for _, m := range []Method{MethodAuto, MethodPrecise, MethodExtended, MethodBasic} {
		if got, err := ParseMethod(m.String()); err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMethod("fastest"); err == nil {
		t.Error("ParseMethod accepted an unknown method")
	}
}
