package guest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// The footprint run (issue 25: monagent under fast GPIO edges and 1 kHz IIO
// scans, cmd/monagent's TestFootprintOnGuestKernel) needs gpio-sim and an
// IIO ADC with a buffer and a timer trigger, none of which Debian's kernels
// build: gpio-sim with irq_sim built in (as gpioSimMembers), the IIO
// configfs core (CONFIG_IIO_CONFIGFS, CONFIG_IIO_SW_DEVICE,
// CONFIG_IIO_SW_TRIGGER), iio-trig-hrtimer and iio_simple_dummy with its
// buffer (CONFIG_IIO_SIMPLE_DUMMY_BUFFER), all from the kernel's source,
// unedited but for one line: gpio-sim's MODULE_DEVICE_TABLE(of, …) goes,
// because the ARM cross-build's modpost is Debian's amd64 one, which sizes
// struct of_device_id for 64 bits and refuses the table; the driver keeps
// its match table, and the guest loads it by path, not by alias.
var footprintKOs = []string{"gpio-sim.ko", "industrialio-configfs.ko", "industrialio-sw-device.ko",
	"industrialio-sw-trigger.ko", "iio-trig-hrtimer.ko", "iio_dummy.ko"}

// FootprintKernelDeps are the kernel's own modules the footprint modules
// need, to be loaded before them: configfs, the IIO core and its triggered
// kfifo buffer.
var FootprintKernelDeps = []string{"configfs", "industrialio", "industrialio-triggered-buffer", "kfifo_buf"}

// footprintKbuild builds them; its first line names the recipe, so that a
// change of the edits below rebuilds (the Kbuild is part of the stamp).
const footprintKbuild = "# footprint recipe 1: gpio-sim without its OF alias, IIO configfs, iio-trig-hrtimer, iio_dummy with buffer\n" +
	"obj-m := gpio-sim.o industrialio-configfs.o industrialio-sw-device.o industrialio-sw-trigger.o iio-trig-hrtimer.o iio_dummy.o\n" +
	"gpio-sim-y := gpio-sim-main.o irq_sim.o\n" +
	"iio_dummy-y := iio_simple_dummy.o iio_simple_dummy_buffer.o\n" +
	"ccflags-y += -DCONFIG_IIO_SIMPLE_DUMMY_BUFFER\n"

func footprintMembers() []gpioSimMember {
	m := []gpioSimMember{
		{src: "drivers/iio/industrialio-configfs.c", dst: "industrialio-configfs.c"},
		{src: "drivers/iio/industrialio-sw-device.c", dst: "industrialio-sw-device.c"},
		{src: "drivers/iio/industrialio-sw-trigger.c", dst: "industrialio-sw-trigger.c"},
		{src: "drivers/iio/trigger/iio-trig-hrtimer.c", dst: "iio-trig-hrtimer.c"},
		{src: "drivers/iio/dummy/iio_simple_dummy.c", dst: "iio_simple_dummy.c"},
		{src: "drivers/iio/dummy/iio_simple_dummy.h", dst: "iio_simple_dummy.h"},
		{src: "drivers/iio/dummy/iio_simple_dummy_buffer.c", dst: "iio_simple_dummy_buffer.c"},
	}
	for _, g := range gpioSimMembers() {
		if g.dst == "gpio-sim-main.c" {
			g.edits = append(g.edits, gpioSimEdit{"MODULE_DEVICE_TABLE(of, gpio_sim_of_match);\n", ""})
		}
		m = append(m, g)
	}
	return m
}

// Footprint gets what a footprint guest of machine m boots with beyond its
// kernel: the modules, built for the pinned kernel under cache (on ARM
// cross-built with Debian's arm-linux-gnueabihf compiler, as
// BuildPPSKtimerARM builds pps-ktimer) in the order they load, after
// FootprintKernelDeps; and the ARM guest's device tree.
func Footprint(ctx context.Context, cache string, m Machine) (dtb string, kos []string, err error) {
	_, flavour, err := debArch(m.Arch)
	if err != nil {
		return "", nil, err
	}
	plan := modulePlan{kbuild: footprintKbuild, kos: footprintKOs, members: footprintMembers()}
	var debs GPIOSimDebs
	if m.Arch == "arm" {
		if _, err := exec.LookPath(armCrossPrefix + "gcc"); err != nil {
			return "", nil, fmt.Errorf("footprint modules for arm: no cross compiler (Debian package gcc-arm-linux-gnueabihf): %w", err)
		}
		plan.makeArgs = []string{"ARCH=arm", "CROSS_COMPILE=" + armCrossPrefix}
		if dtb, err = ARMDeviceTree(ctx, filepath.Join(cache, "dtb")); err != nil {
			return "", nil, err
		}
		debs, err = FetchARMModuleDebs(ctx, cache)
	} else {
		debs, err = FetchGPIOSimDebs(ctx, cache)
	}
	if err != nil {
		return "", nil, err
	}
	rel := KernelABI + "-" + flavour
	first, err := buildModules(ctx, filepath.Join(cache, "footprint-"+rel), rel, debs, plan)
	if err != nil {
		return "", nil, err
	}
	for _, k := range footprintKOs {
		kos = append(kos, filepath.Join(filepath.Dir(first), k))
	}
	return dtb, kos, nil
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
