package guest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// The guests run as a stage of their own in scripts/test.sh, which sets
// MONAGENT_GUEST_RIG=1; MONAGENT_GUEST_RUN=regexp narrows the tests run
// inside (go test's -run), for debugging one by hand.
func requireRig(t *testing.T, m Machine) (cache, root string) {
	t.Helper()
	if os.Getenv("MONAGENT_GUEST_RIG") == "" {
		t.Skip("the QEMU guests run as their own stage of scripts/test.sh (set MONAGENT_GUEST_RIG=1 to run them here)")
	}
	if err := m.Available(); err != nil {
		t.Skipf("QEMU cannot run here: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err = ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(testbed.CacheDir(), "guest"), root
}

// StepClockEnv lets a guest's tests step its CLOCK_REALTIME (the agent's
// TestJudgeRealtimeStepOnKtimer), which they never do elsewhere.
const StepClockEnv = "MONAGENT_GUEST_STEP_CLOCK=1"

func guestTestArgs() []string {
	args := []string{"-test.short", "-test.timeout=4m"}
	if r := os.Getenv("MONAGENT_GUEST_RUN"); r != "" {
		args = append(args, "-test.run="+r)
	}
	return args
}

// check fails the test for every run that did not exit 0, and for a guest
// that did not finish its plan.
func check(t *testing.T, spec Spec, res *Result, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
	if res == nil {
		return
	}
	t.Logf("guest kernel: %s", res.Kernel)
	for _, e := range res.Errors {
		t.Errorf("guest init: %s", e)
	}
	for _, p := range spec.Packages {
		code, ok := res.Exits[p]
		switch {
		case !ok:
			t.Errorf("%s: the guest never reported its tests' end", p)
		case code != 0:
			t.Errorf("%s: tests failed in the guest (exit %d)", p, code)
		}
	}
	if !res.Done {
		t.Errorf("the guest did not finish; its last lines:\n%s", strings.Join(res.Tail, "\n"))
	}
}

// TestGuestARM runs the kernel-facing packages' tests on a 32-bit ARM kernel:
// the PHC of an e1000e, the PL061 GPIO controller with QEMU's power button on
// line 3, packet timestamps on loopback and eth0, the PPS source on
// pps-ktimer (cross-built out of tree), and the sensors as in the amd64
// guest: iio_simple_dummy's buffer on the hrtimer trigger, lm75 and ina226
// on i2c-stub, gpio-sim edges triggering readings (gpio-sim, i2c-stub and
// the IIO and INA2xx drivers cross-built likewise).
func TestGuestARM(t *testing.T) {
	cache, root := requireRig(t, ARM)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dtb, err := ARMDeviceTree(ctx, filepath.Join(cache, "dtb"))
	if err != nil {
		t.Fatal(err)
	}
	debs, err := FetchARMModuleDebs(ctx, cache)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pps, err := BuildPPSKtimerARM(ctx, filepath.Join(cache, "pps-ktimer-"+KernelABI+"-armmp"), KernelABI+"-armmp", debs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pps-ktimer module for arm: %s (%v)", pps, time.Since(start).Round(time.Second))
	spec := Spec{
		Machine: ARM, Cache: cache, ModuleRoot: root,
		Packages:   []string{"phc", "gpio", "sockts", "ntp", "ptp", "agent", "sensors"},
		Run:        map[string]string{"agent": "OnPowerButton|FrozenPHC|GuestPHCSet|OnKtimer|OnRealKernel", "sensors": "OnRealKernel"},
		ExtraKOs:   append([]string{pps, PPSKtimerARMGPIOSim(pps), I2CStubModule(pps)}, SensorKernelModules(pps)...),
		Params:     map[string]string{"i2c-stub": I2CStubParams},
		ConfigFS:   true,
		TestArgs:   guestTestArgs(),
		Modules:    append(append([]string{"e1000e"}, IIOKernelDeps...), HwmonKernelDeps...),
		Interfaces: []string{"eth0"},
		Env:        []string{"MONAGENT_GUEST_POWER_BUTTON=gpiochip0:3", "MONAGENT_GUEST_PHC_IFACE=eth0", IIOGuestEnv, HwmonGuestEnv, StepClockEnv},
		DTB:        dtb,
		Timeout:    4 * time.Minute,
	}
	boot, err := Prepare(ctx, spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	boot.Out, boot.Timeout = os.Stdout, 10*time.Minute
	presses := 0
	boot.Request = func(req string, mon *Monitor) error {
		if req != "powerdown" {
			return os.ErrInvalid
		}
		presses++
		return mon.Command("system_powerdown")
	}
	start = time.Now()
	res, err := boot.Run(ctx)
	t.Logf("ARM guest: %v, %d power-button presses", time.Since(start).Round(time.Second), presses)
	check(t, spec, res, err)
}

// TestGuestAMD64 runs the GPIO tests on an amd64 kernel with gpio-sim (built
// out of tree from the kernel's own source): bursts of edges, the kernel's
// queue overflowed on purpose and every lost edge accounted for; the
// e1000e's PHC; the PPS source on pps-ktimer (built likewise); and the
// sensors on real drivers: iio_simple_dummy's buffer on the hrtimer trigger
// (built likewise, with counters), lm75 and ina226 on i2c-stub.
func TestGuestAMD64(t *testing.T) {
	cache, root := requireRig(t, AMD64)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	debs, err := FetchGPIOSimDebs(ctx, cache)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ko, err := BuildGPIOSim(ctx, filepath.Join(cache, "gpio-sim-"+KernelABI+"-amd64"), KernelABI+"-amd64", debs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gpio-sim module: %s (%v)", ko, time.Since(start).Round(time.Second))
	files, err := HostProgram(ctx, "gpiomon")
	if err != nil {
		t.Logf("no gpiomon in the guest: %v", err)
	}
	spec := Spec{
		Machine: AMD64, Cache: cache, ModuleRoot: root,
		Packages:   []string{"gpio", "phc", "internal/testbed/gpioladder", "agent", "sensors"},
		Run:        map[string]string{"agent": "OnGPIOSim|FrozenPHC|OnKtimer|OnRealKernel", "sensors": "OnRealKernel"},
		TestArgs:   guestTestArgs(),
		Modules:    append(append([]string{"e1000e", "i2c-stub"}, IIOKernelDeps...), HwmonKernelDeps...),
		Params:     map[string]string{"i2c-stub": I2CStubParams},
		ExtraKOs:   append([]string{ko, PPSKtimerModule(ko)}, SensorKernelModules(ko)...),
		ConfigFS:   true,
		Interfaces: []string{"eth0"},
		Env:        []string{"MONAGENT_GUEST_PHC_IFACE=eth0", IIOGuestEnv, HwmonGuestEnv, StepClockEnv},
		Files:      files,
		Timeout:    4 * time.Minute,
	}
	boot, err := Prepare(ctx, spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	boot.Out, boot.Timeout = os.Stdout, 10*time.Minute
	start = time.Now()
	res, err := boot.Run(ctx)
	t.Logf("amd64 guest: %v", time.Since(start).Round(time.Second))
	check(t, spec, res, err)
}
