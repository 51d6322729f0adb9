package phc

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/timebase"
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

func TestCheckAdvancing(t *testing.T) {
	rt := timebase.DomainRealtime
	at := func(sys, p int64) Reading { return Reading{SysNS: sys, PHCNS: p, SysDomain: rt} }
	for _, c := range []struct {
		name       string
		prev, cur  Reading
		notAdvance bool
	}{
		{"running", at(1e9, 5e9), at(2e9, 6e9+1000), false},
		{"steered 500 ppm slow", at(1e9, 5e9), at(2e9, 6e9-500_000), false},
		{"frozen", at(1e9, 5e9), at(2e9, 5e9), true},
		{"stepped back", at(1e9, 5e9), at(2e9, 4e9), true},
		{"half speed", at(1e9, 5e9), at(2e9, 5.4e9), true},
		{"too close to judge", at(1e9, 5e9), at(1e9+999_999, 5e9), false},
		{"other clocks", at(1e9, 5e9), Reading{SysNS: 3e9, PHCNS: 5e9, SysDomain: timebase.DomainMonotonic}, false},
	} {
		err := CheckAdvancing(c.prev, c.cur)
		if got := errors.Is(err, ErrNotAdvancing); got != c.notAdvance {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	err := CheckAdvancing(at(1e9, 5e9), at(2e9, 5e9))
	if want := "PHC is not advancing: it moved 0 ns while realtime moved 1000000000 ns (stopped, or stepped back)"; err == nil || err.Error() != want {
		t.Errorf("message %v\nwant    %s", err, want)
	}
}

func TestSysfsInterfacePHC(t *testing.T) {
	sys := t.TempDir()
	os.MkdirAll(filepath.Join(sys, "class/net/eth0/device/ptp/ptp2"), 0o755)
	os.MkdirAll(filepath.Join(sys, "class/net/lo"), 0o755)
	if idx, ok := SysfsInterfacePHC(sys, "eth0"); !ok || idx != 2 {
		t.Errorf("eth0: %d %v, want 2", idx, ok)
	}
	for _, name := range []string{"lo", "eth9"} {
		if idx, ok := SysfsInterfacePHC(sys, name); ok {
			t.Errorf("%s: PHC %d", name, idx)
		}
	}
}
