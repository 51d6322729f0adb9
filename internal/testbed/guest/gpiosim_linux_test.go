package guest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

const gpioSimTestRelease = "6.1.0-50-amd64"

// gpioSimTestDebs fetches the packages into the rig's cache, or skips the
// test outside the rig's stage.
func gpioSimTestDebs(t *testing.T) GPIOSimDebs {
	t.Helper()
	if os.Getenv("MONAGENT_GUEST_RIG") == "" {
		t.Skip("gpio-sim build: runs in the QEMU rig's stage of scripts/test.sh (set MONAGENT_GUEST_RIG=1; unpacks the kernel source, ~25 s)")
	}
	debs, err := FetchGPIOSimDebs(context.Background(), filepath.Join(testbed.CacheDir(), "guest"))
	if err != nil {
		t.Fatal(err)
	}
	return debs
}

func TestBuildGPIOSim(t *testing.T) {
	debs := gpioSimTestDebs(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	ko, err := BuildGPIOSim(ctx, dir, gpioSimTestRelease, debs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold build (unpack, source extraction, make) took %v", time.Since(start).Round(time.Millisecond))
	if want := filepath.Join(dir, "build", "gpio-sim.ko"); ko != want {
		t.Errorf("module at %s, want %s", ko, want)
	}
	info, err := ModInfo(ko)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vermagic=%q depends=%q", info["vermagic"], info["depends"])
	if want := gpioSimTestRelease + " SMP preempt mod_unload modversions"; !strings.HasPrefix(info["vermagic"], want) {
		t.Errorf("vermagic %q, want prefix %q", info["vermagic"], want)
	}
	t.Run("ModInfo", func(t *testing.T) {
		for k, want := range map[string]string{
			"name":        "gpio_sim",
			"license":     "GPL",
			"description": "GPIO Simulator Module",
			"depends":     "configfs",
			"retpoline":   "Y",
		} {
			if info[k] != want {
				t.Errorf("modinfo %s = %q, want %q", k, info[k], want)
			}
		}
		// The OF device table gives an alias per compatible string, joined.
		if a := info["alias"]; !strings.Contains(a, "of:N*T*Cgpio-sim") {
			t.Errorf("modinfo alias = %q, want the gpio-sim OF alias", a)
		}
	})

	// A second call reuses the module: same path, file untouched, no make.
	before, err := os.Stat(ko)
	if err != nil {
		t.Fatal(err)
	}
	objBefore, err := os.Stat(filepath.Join(dir, "build", "gpio-sim-main.o"))
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	again, err := BuildGPIOSim(context.Background(), dir, gpioSimTestRelease, debs)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if again != ko {
		t.Errorf("second build returned %s, want %s", again, ko)
	}
	after, err := os.Stat(ko)
	if err != nil {
		t.Fatal(err)
	}
	objAfter, err := os.Stat(filepath.Join(dir, "build", "gpio-sim-main.o"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || !objAfter.ModTime().Equal(objBefore.ModTime()) {
		t.Errorf("second build rebuilt the module (mtime %v -> %v)", before.ModTime(), after.ModTime())
	}
	if took > time.Second {
		t.Errorf("second build took %v; it should reuse the module", took)
	}

	// A release the headers do not provide fails with a clear error.
	_, err = BuildGPIOSim(ctx, t.TempDir(), "6.1.0-50-nosuch", debs)
	t.Logf("release the headers lack: %v", err)
	if err == nil ||
		!strings.Contains(err.Error(), "gpio-sim build: headers package") {
		t.Errorf("build for a release the headers lack: err = %v, want a gpio-sim build error", err)
	}
}

// TestModInfo reads an object file whose .modinfo section is known, built
// by gcc like the kernel's MODULE_INFO does, with a repeated key.
func TestModInfo(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("modinfo: no gcc to build a test object")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "m.c")
	obj := filepath.Join(dir, "m.o")
	const c = `#define INFO(n, s) static const char n[] __attribute__((used, section(".modinfo"), aligned(1))) = s
INFO(a, "license=GPL");
INFO(b, "alias=one");
INFO(d, "depends=");
INFO(e, "alias=two");
INFO(f, "vermagic=1.2.3 SMP mod_unload");
`
	if err := os.WriteFile(src, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-c", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	info, err := ModInfo(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"license": "GPL", "alias": "one,two", "depends": "", "vermagic": "1.2.3 SMP mod_unload"}
	if len(info) != len(want) {
		t.Errorf("modinfo = %q, want %q", info, want)
	}
	for k, v := range want {
		if got, ok := info[k]; !ok || got != v {
			t.Errorf("modinfo %s = %q (present %v), want %q", k, got, ok, v)
		}
	}

	if _, err := ModInfo(filepath.Join(dir, "missing.ko")); err == nil {
		t.Error("ModInfo of a missing file: no error")
	}
	if _, err := ModInfo(src); err == nil {
		t.Error("ModInfo of a C source: no error")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ModInfo(exe); err == nil || !strings.Contains(err.Error(), ".modinfo") {
		t.Errorf("ModInfo of the test binary: err = %v, want no .modinfo section", err)
	}
}

func TestGPIOSimEdits(t *testing.T) {
	var irqSim gpioSimMember
	for _, m := range gpioSimMembers() {
		if m.src == "kernel/irq/irq_sim.c" {
			irqSim = m
		}
	}
	got, err := irqSim.edit([]byte("\t\thandle_simple_irq(irq_to_desc(irqnum));\n"))
	if err != nil || string(got) != "\t\tgeneric_handle_irq(irqnum);\n" {
		t.Errorf("edit = %q, %v", got, err)
	}
	if _, err := irqSim.edit([]byte("generic_handle_irq(irqnum);\n")); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("edit of changed source: err = %v, want not found", err)
	}
}
