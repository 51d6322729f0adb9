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
