package guest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Footprint gets what a footprint guest of machine m (issue 25: monagent
// under fast GPIO edges and 1 kHz IIO scans, cmd/monagent's
// TestFootprintOnGuestKernel) boots with beyond its kernel: gpio-sim and
// the IIO modules (the configfs core, iio-trig-hrtimer, iio_simple_dummy
// with its buffer), the same the sensors tests load (BuildGPIOSim on amd64,
// BuildPPSKtimerARM beside pps-ktimer on arm, sharing their caches), in
// the order they load after IIOKernelDeps; and the ARM guest's device tree.
func Footprint(ctx context.Context, cache string, m Machine) (dtb string, kos []string, err error) {
	if m.Arch == "arm" {
		if dtb, err = ARMDeviceTree(ctx, filepath.Join(cache, "dtb")); err != nil {
			return "", nil, err
		}
	}
	first, err := BuildRigModules(ctx, cache, m)
	if err != nil {
		return "", nil, err
	}
	gpioSim := first
	if m.Arch == "arm" {
		gpioSim = PPSKtimerARMGPIOSim(first)
	}
	return dtb, append([]string{gpioSim}, beside(first, iioKOs)...), nil
}

// GoBinary builds the package pkg (relative to the module root: "cmd/monagent")
// as the guest runs it: static, for its architecture, GOARM=7 on arm, as the
// board's binary is built; out is the file written.
func GoBinary(ctx context.Context, spec Spec, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./"+filepath.ToSlash(pkg))
	cmd.Dir = spec.ModuleRoot
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+spec.Machine.Arch, "GOARM=7", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("guest: go build %s: %w\n%s", pkg, err, tail(b, 2000))
	}
	return nil
}
