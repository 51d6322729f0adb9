package sensors

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCheckPattern(t *testing.T) {
	for _, c := range []struct {
		pat, want string // want: "" for a good pattern, else what the error says
	}{
		{"hwmon/ina226/*", ""},
		{"iio/*/voltage[0-3]", ""},
		{"*/x/y", ""},
		{"th?rmal/*/*", ""},
		{"ina226/*", "want source/device/name"},
		{"hwmon/a/b/c", "want source/device/name"},
		{"hwmon/[/*", "syntax error in pattern"},
		{"gpu/x/y", `source "gpu": want hwmon, thermal or iio`},
	} {
		err := CheckPattern(c.pat)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.pat, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want it to say %q", c.pat, err, c.want)
		}
	}
	if err := CheckPattern("hwmon/[/*"); !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("a bad pattern: %v, want path.ErrBadPattern", err)
	}
}

func matchedIDs(m Matched) []string {
	var ids []string
	for _, s := range m.Sensors {
		ids = append(ids, s.ID())
	}
	return ids
}

// TestMatch: the sensors whose IDs match, sorted by ID, keyed by ID or, for
// two chips of one name, by their node too.
func TestMatch(t *testing.T) {
	fs := board(t)
	// A second INA226: its sensors share IDs with the first's.
	dir := filepath.Join(fs.Sys, "class/hwmon/hwmon11")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "name"), []byte("ina226\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "in1_input"), []byte("3300\n"), 0o644)

	m, err := fs.Match([]string{"hwmon/ina226/in*", "iio/bmp*/*", "hwmon/tmp102/temp1"})
	defer CloseAll(m.Sensors)
	if err != nil || m.Failed != 0 {
		t.Fatalf("Match: %v, %d failed", err, m.Failed)
	}
	wantKeys := []string{"hwmon/ina226@hwmon0/in1", "hwmon/ina226@hwmon11/in1", "hwmon/tmp102/temp1", "iio/bmp280/temp"}
	if !reflect.DeepEqual(m.Keys, wantKeys) {
		t.Errorf("keys %v, want %v", m.Keys, wantKeys)
	}
	wantIDs := []string{"hwmon/ina226/in1", "hwmon/ina226/in1", "hwmon/tmp102/temp1", "iio/bmp280/temp"}
	if got := matchedIDs(m); !reflect.DeepEqual(got, wantIDs) {
		t.Errorf("ids %v, want %v", got, wantIDs)
	}
	if v, err := m.Sensors[1].Read(); err != nil || v != 3300e6 {
		t.Errorf("the second INA226: %d, %v", v, err)
	}

	none, err := fs.Match([]string{"hwmon/ina219/*"})
	if err != nil || len(none.Sensors) != 0 || len(none.Keys) != 0 {
		t.Errorf("no match: %v, %v", matchedIDs(none), err)
	}
}

// TestMatchListsOnlyTheSourcesNamed: a source no pattern names is not
// listed (its failure does not count); one that fails to list is counted
// and the others' sensors still match.
func TestMatchListsOnlyTheSourcesNamed(t *testing.T) {
	fs := board(t)
	hwmon := filepath.Join(fs.Sys, "class/hwmon")
	if err := os.RemoveAll(hwmon); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hwmon, nil, 0o644); err != nil { // not a directory: listing it fails
		t.Fatal(err)
	}
	m, err := fs.Match([]string{"thermal/*/cpu_thermal"})
	CloseAll(m.Sensors)
	if err != nil || m.Failed != 0 || len(m.Sensors) != 1 {
		t.Errorf("thermal only: %v, %v, %d failed", matchedIDs(m), err, m.Failed)
	}
	m, err = fs.Match([]string{"*/*/cpu_thermal"})
	CloseAll(m.Sensors)
	if err == nil || m.Failed != 1 || len(m.Sensors) != 1 {
		t.Errorf("every source: %v, %v, %d failed; want thermal's sensor, hwmon failed", matchedIDs(m), err, m.Failed)
	}
}
