package sensorstest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// IIODummy is the rig's iio_simple_dummy device on its hrtimer trigger,
// both built out of tree with counters (internal/testbed/guest/iiodummy_linux.go).
// Tests only.
type IIODummy struct {
	Name    string // the device's name (its configfs directory)
	Dir     string // its sysfs directory
	Trigger string // the hrtimer trigger's sysfs directory
}

// RequireIIODummy creates the dummy device and the trigger (configfs) where
// the guest says they can be made ($MONAGENT_GUEST_IIO), attaches the trigger
// with the device's buffer off, or skips the test.
func RequireIIODummy(t testing.TB) *IIODummy {
	t.Helper()
	if os.Getenv("MONAGENT_GUEST_IIO") == "" {
		t.Skip("needs iio_dummy and iio-trig-hrtimer with their counters, as the rig's guests have them (MONAGENT_GUEST_IIO=1)")
	}
	const cfg = "/sys/kernel/config/iio"
	d := &IIODummy{Name: "monagent-dummy"}
	trigName := "monagent-hrtimer"
	for _, dir := range []string{cfg + "/devices/dummy/" + d.Name, cfg + "/triggers/hrtimer/" + trigName} {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatalf("creating %s: %v", dir, err)
		}
	}
	d.Dir = sysDirNamed(t, "/sys/bus/iio/devices/iio:device*", d.Name)
	d.Trigger = sysDirNamed(t, "/sys/bus/iio/devices/trigger*", trigName)
	WriteSys(t, filepath.Join(d.Dir, "buffer", "enable"), "0")
	WriteSys(t, filepath.Join(d.Dir, "trigger", "current_trigger"), trigName)
	return d
}

func sysDirNamed(t testing.TB, glob, name string) string {
	t.Helper()
	dirs, _ := filepath.Glob(glob)
	for _, d := range dirs {
		if b, _ := os.ReadFile(filepath.Join(d, "name")); strings.TrimSpace(string(b)) == name {
			return d
		}
	}
	t.Fatalf("none of %v is named %s", dirs, name)
	return ""
}

// Set sets the trigger's rate (Hz) and the scans the dummy pushes a trigger.
func (d *IIODummy) Set(t testing.TB, rate, burst int) {
	t.Helper()
	WriteSys(t, filepath.Join(d.Trigger, "sampling_frequency"), strconv.Itoa(rate))
	WriteSys(t, "/sys/module/iio_dummy/parameters/burst", strconv.Itoa(burst))
}

// IIOCounters are the modules' counters (module parameters): the trigger's
// polls, skipped periods and polls dropped busy; the dummy's handler runs
// and scans pushed.
type IIOCounters struct{ Fired, Overruns, Busy, Runs, Scans uint64 }

// Counters reads the counters.
func (d *IIODummy) Counters(t testing.TB) IIOCounters {
	t.Helper()
	var c IIOCounters
	for _, p := range []struct {
		dst  *uint64
		path string
	}{
		{&c.Fired, "/sys/module/iio_trig_hrtimer/parameters/fired"},
		{&c.Overruns, "/sys/module/iio_trig_hrtimer/parameters/overruns"},
		{&c.Busy, "/sys/module/iio_trig_hrtimer/parameters/busy"},
		{&c.Runs, "/sys/module/iio_dummy/parameters/runs"},
		{&c.Scans, "/sys/module/iio_dummy/parameters/scans"},
	} {
		b, err := os.ReadFile(p.path)
		if err != nil {
			t.Fatal(err)
		}
		if *p.dst, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
	}
	return c
}

// WriteSys writes a sysfs attribute or fails the test.
func WriteSys(t testing.TB, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v), 0); err != nil {
		t.Fatalf("write %s to %s: %v", v, path, err)
	}
}
