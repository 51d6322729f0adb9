package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/timeapi"
	"github.com/monagent/monagent/timebase"
)

// `monagent time` on a segment this test writes: the interval, its width
// and state, as text and JSON, and an exit code for each case the docs
// list.
func TestTimeCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "time.shm")
	w, err := timeapi.Create(path, 0o644, []string{"system", "global"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	raw, _ := timebase.MonotonicRaw.Now()
	rt, _ := timebase.Realtime.Now()
	model := func(st timeapi.State, void int64) timeapi.Model {
		return timeapi.Model{State: st, BaseNS: raw, TrueNS: rt + 3e6, BoundNS: 20_000, GrowthPPB: 5000, VoidNS: raw + void, RealtimeNS: rt}
	}
	w.Publish(0, model(timeapi.Locked, 600e9))
	look := func(args ...string) (map[string]any, string, int) {
		t.Helper()
		o, e, code := run(t, dir, append([]string{"time"}, args...)...)
		var d map[string]any
		if strings.Contains(strings.Join(args, " "), "--json") {
			if err := json.Unmarshal([]byte(o), &d); err != nil {
				t.Fatalf("time %v: not JSON: %q (%s)", args, o, e)
			}
		}
		return d, o + e, code
	}
	d, out, code := look("--path", path, "--json")
	if code != 0 || d["clock"] != "system" || d["state"] != "LOCKED" {
		t.Fatalf("LOCKED: exit %d, %v %s", code, d, out)
	}
	if wd, off := d["width_ns"].(float64), d["midpoint_ns"].(float64)-d["realtime_ns"].(float64); wd < 40_000 || off < 2.5e6 || off > 3.5e6 { // the model runs at rate 0: REALTIME drifts from it at the host's NTP frequency while the CLI starts (seconds under emulation)
		t.Errorf("width %v, midpoint − REALTIME %v: want ±20 µs or more around REALTIME + 3 ms", wd, off)
	}
	if _, out, code := look("--path", path); code != 0 || !strings.Contains(out, "system: LOCKED [") || !strings.Contains(out, "width ") {
		t.Errorf("text: exit %d %q", code, out)
	}
	MONAGENT := "MONAGENT_TIME_PATH"
	t.Setenv(MONAGENT, path) // the default path
	if _, out, code := look(); code != 0 {
		t.Errorf("with $MONAGENT_TIME_PATH: exit %d %q", code, out)
	}
	os.Unsetenv(MONAGENT)

	for _, tc := range []struct {
		name  string
		setup func()
		args  []string
		code  int
		state string
	}{
		{"holdover", func() { w.Publish(0, model(timeapi.Holdover, 600e9)) }, []string{"--path", path, "--json"}, 0, "HOLDOVER"},
		{"freerun", func() { w.Publish(0, model(timeapi.Freerun, 600e9)) }, []string{"--path", path, "--json"}, exitTimeNotValid, "FREERUN"},
		{"not yet judged", nil, []string{"--path", path, "--json", "--clock", "global"}, exitTimeNotValid, "UNKNOWN"},
		{"void", func() { w.Void(0) }, []string{"--path", path, "--json"}, exitTimeVoid, "VOID"},
		{"no such clock", nil, []string{"--path", path, "--json", "--clock", "gps"}, exitTimeAbsent, "ABSENT"},
		{"no segment", nil, []string{"--path", filepath.Join(dir, "none.shm"), "--json"}, exitTimeAbsent, "ABSENT"},
		{"malformed", func() { os.WriteFile(filepath.Join(dir, "bad.shm"), []byte(strings.Repeat("\x02", 4096)), 0o644) }, []string{"--path", filepath.Join(dir, "bad.shm"), "--json"}, exitTimeBad, "MALFORMED"},
		{"usage", nil, []string{"--path", path, "--config", "x.yaml"}, exitConfig, ""},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		d, out, code := look(tc.args...)
		if code != tc.code || tc.state != "" && d["state"] != tc.state {
			t.Errorf("%s: exit %d, state %v, want %d %s: %s", tc.name, code, d["state"], tc.code, tc.state, out)
		}
	}
}
