package sensors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSelection: nothing is listed before the first Scan; Due follows the
// clock; a sensor that appears is found by the next Scan, and the sources
// that could not be listed add up over the scans.
func TestSelection(t *testing.T) {
	fs := board(t)
	clock := time.Unix(1000, 0)
	patterns := []string{"hwmon/ina219/*"}
	s := NewSelection(func() (Matched, error) { return fs.Match(patterns) }, func() time.Time { return clock })
	t.Cleanup(func() { s.Close() })
	if !s.Due(time.Hour) || len(s.Sensors) != 0 {
		t.Fatalf("before the first scan: due %v, %d sensors; want due, none", s.Due(time.Hour), len(s.Sensors))
	}
	if err := s.Scan(); err != nil || len(s.Sensors) != 0 {
		t.Fatalf("scan: %v, %d sensors; want none", err, len(s.Sensors))
	}
	clock = clock.Add(9 * time.Second)
	if s.Due(10 * time.Second) {
		t.Fatal("due 9 s after the scan with a 10 s period")
	}
	clock = clock.Add(time.Second)
	if !s.Due(10 * time.Second) {
		t.Fatal("not due 10 s after the scan with a 10 s period")
	}
	dir := filepath.Join(fs.Sys, "class", "hwmon", "hwmon9")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"name": "ina219\n", "in0_input": "3300\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Scan(); err != nil || len(s.Sensors) != 1 || s.Keys[0] != "hwmon/ina219/in0" || s.Due(time.Second) {
		t.Fatalf("rescan: %v, keys %v, due %v; want hwmon/ina219/in0, not due", err, s.Keys, s.Due(time.Second))
	}
	if v, err := s.Sensors[0].Read(); err != nil || v != 3300e6 {
		t.Fatalf("read %d, %v; want 3300000000", v, err)
	}

	bad := NewFS(filepath.Join(fs.Sys, "class", "hwmon", "hwmon0", "name"), fs.Dev) // a file where trees should be
	b := NewSelection(func() (Matched, error) { return bad.Match([]string{"*/*/*"}) }, time.Now)
	for range 2 {
		if err := b.Scan(); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("unreadable trees: %v", err)
		}
	}
	if b.ScanFailures() != 6 || b.Failed != 3 {
		t.Fatalf("%d scan failures (%d the last scan), want 6 (3)", b.ScanFailures(), b.Failed)
	}
}

// TestSelectionSensorGone: a chip removed (its hwmon directory gone) is one
// failed read that says so (Gone) and makes the selection due at once; a
// value that fails otherwise (not a number) is not gone and waits for the
// period; the listing again is without the chip, and with it when it is
// back.
func TestSelectionSensorGone(t *testing.T) {
	fs := board(t)
	clock := time.Unix(1000, 0)
	s := NewSelection(func() (Matched, error) { return fs.Match([]string{"hwmon/ina219/*", "hwmon/lm75/*"}) }, func() time.Time { return clock })
	t.Cleanup(func() { s.Close() })
	mk := func(node, name, attr, v string) string {
		dir := filepath.Join(fs.Sys, "class", "hwmon", node)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, v := range map[string]string{"name": name + "\n", attr: v} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	ina := mk("hwmon8", "ina219", "in0_input", "3300\n")
	lm75 := mk("hwmon9", "lm75", "temp1_input", "26500\n")
	if err := s.Scan(); err != nil || len(s.Sensors) != 2 {
		t.Fatalf("scan: %v, keys %v", err, s.Keys)
	}
	if err := os.WriteFile(filepath.Join(ina, "in0_input"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(lm75); err != nil {
		t.Fatal(err)
	}
	for i, x := range s.Sensors {
		_, err := x.Read()
		t.Logf("%s: %v", s.Keys[i], err)
		if wantGone := x.Name == "temp1"; err == nil || x.Gone() != wantGone {
			t.Errorf("%s: %v, gone %v; want an error, gone %v", s.Keys[i], err, x.Gone(), wantGone)
		}
	}
	if !s.Due(time.Hour) {
		t.Fatal("not due with a sensor gone")
	}
	if err := s.Scan(); err != nil || len(s.Sensors) != 1 || s.Due(time.Hour) {
		t.Fatalf("rescan without the LM75: %v, keys %v, due %v; want the INA219 alone, not due", err, s.Keys, s.Due(time.Hour))
	}
	if _, err := s.Sensors[0].Read(); err == nil || s.Sensors[0].Gone() || s.Due(time.Hour) {
		t.Fatalf("garbage: %v, gone %v, due %v; want an error, not gone, not due", err, s.Sensors[0].Gone(), s.Due(time.Hour))
	}
	mk("hwmon10", "lm75", "temp1_input", "27000\n")
	clock = clock.Add(time.Hour)
	if err := s.Scan(); err != nil || len(s.Sensors) != 2 {
		t.Fatalf("the LM75 back: %v, keys %v", err, s.Keys)
	}
}
